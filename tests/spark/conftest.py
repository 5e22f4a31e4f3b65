"""Fixtures of the Spark tests: one SparkSession (local[2]) for the whole session. Brokers, unique
topic names and the official client (`official`, the oracle) come from tests/conftest.py.

pyspark is not optional here: the README's test command installs the `spark` extra, so a missing
pyspark fails these tests (when the session starts) instead of skipping them."""
from __future__ import annotations

import logging

import pytest


@pytest.fixture(scope="session")
def spark():
    from minipulsar.pipeline.session import local_session, stop_session

    session = local_session("minipulsar-tests", "local[2]", log_level="ERROR",
                            **{"spark.sql.streaming.minBatchesToRetain": "10",
                               "spark.driver.memory": "1g", "spark.ui.showConsoleProgress": "false"})
    logging.getLogger("py4j").setLevel(logging.WARNING)
    yield session
    stop_session(session)
