"""A SparkSession for the example and the tests, with the "pulsar" format registered.

Spark starts its Python workers with ``PYSPARK_PYTHON`` (else ``python3`` on the PATH), which
must be an interpreter that can import ``pipeline`` and ``client``: this sets it, and
``PYSPARK_DRIVER_PYTHON``, to the running interpreter unless they are already set. On a cluster,
install minipulsar (``pip install 'minipulsar[spark]'``) on every executor instead.
"""
from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)


def local_session(app_name: str = "minipulsar", master: str = "local[2]", **conf: str):
    """getOrCreate a SparkSession on master with conf (Spark keys -> values) and register the
    "pulsar" format. Small defaults for a laptop: 2 shuffle partitions, no UI."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from minipulsar.pipeline import register

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                "spark.sql.session.timeZone": "UTC", **conf}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    log.info("SparkSession %s on %s (Spark %s)", app_name, master, spark.version)
    return spark
