"""Stopping a streaming query while its foreachBatch function runs a Spark job (what Ctrl-C does
to the example when it lands mid-batch), with pipeline.graceful_stop's guard."""
from __future__ import annotations

import threading
from contextlib import contextmanager

from minipulsar.pipeline.graceful_stop import INTERRUPTED_TEXT, guard_foreach_batch

from tests.helpers import wait_for


def test_spark_takes_the_guard_text_for_an_interruption(spark):
    # Spark decides that a foreachBatch failure is "just the stop" by this pattern; on the full
    # text of a Py4JJavaError (thousands of characters) its (.|\n)* overflows the thread's stack.
    pattern = spark._jvm.org.apache.spark.sql.execution.streaming.runtime.StreamExecution.PROXY_ERROR()
    assert pattern.findFirstIn(INTERRUPTED_TEXT).isDefined()


@contextmanager
def jvm_stderr_to(spark, path):
    """Send the JVM's System.err (where an uncaught exception in a thread is printed) to path."""
    system = spark._jvm.java.lang.System
    previous = system.err
    system.setErr(spark._jvm.java.io.PrintStream(spark._jvm.java.io.FileOutputStream(str(path)), True))
    try:
        yield
    finally:
        system.setErr(previous)


def test_stop_in_the_middle_of_foreach_batch_is_a_clean_stop(spark, tmp_path):
    stopping, running = threading.Event(), threading.Event()

    def slow(batch_df, batch_id):
        running.set()
        # A job that runs until the stop interrupts it.
        batch_df.sparkSession.range(0, 1 << 40, numPartitions=1).selectExpr("sum(id)").collect()

    query = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
             .writeStream.foreachBatch(guard_foreach_batch(slow, stopping))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    with jvm_stderr_to(spark, tmp_path / "stderr"):
        try:
            wait_for(running.is_set, "the foreachBatch function to start its job", timeout=60)
            stopping.set()
        finally:
            query.stop()
    assert not query.isActive and query.exception() is None
    assert "Exception in thread" not in (tmp_path / "stderr").read_text()  # e.g. a StackOverflowError
