"""Helpers of the Spark tests (import them as ``tests.spark.helpers``: a bare ``conftest`` import
resolves to whichever conftest module pytest loaded last)."""
from __future__ import annotations


def source(spark, url: str, **options):
    """spark.read.format('pulsar') with service.url and options (keyword names with dots as __)."""
    reader = spark.read.format("pulsar").option("service.url", url)
    for name, value in options.items():
        reader = reader.option(name.replace("__", "."), str(value))
    return reader.load()
