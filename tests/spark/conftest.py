"""Fixtures of the Spark tests: one SparkSession (local[2]) for the whole session, unique topic
names, and the official client (the oracle). Brokers come from tests/conftest.py."""
from __future__ import annotations

import logging
import uuid

import pytest

pulsar = pytest.importorskip("pulsar")
pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark():
    from pipeline.session import local_session

    session = local_session("minipulsar-tests", "local[2]",
                            **{"spark.sql.streaming.minBatchesToRetain": "10",
                               "spark.driver.memory": "1g"})
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    yield session
    session.stop()


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/s-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def official(broker):
    c = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


def source(spark, url: str, **options):
    """spark.read.format('pulsar') with service.url and options (keyword names with dots as __)."""
    reader = spark.read.format("pulsar").option("service.url", url)
    for name, value in options.items():
        reader = reader.option(name.replace("__", "."), str(value))
    return reader.load()
