"""Fixtures for the storage unit tests: real factories on real files in tmp_path."""
import pytest

from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory


@pytest.fixture
async def make_factory(tmp_path):
    """``await make_factory(**config)`` -> a started factory on tmp_path/"data"; closed at teardown."""
    made = []

    async def make(data_dir=None, **cfg):
        factory = ManagedLedgerFactory(data_dir or tmp_path / "data", ManagedLedgerConfig(**cfg))
        await factory.start()
        made.append(factory)
        return factory

    yield make
    for factory in made:
        await factory.close()  # a no-op when the test closed it already
