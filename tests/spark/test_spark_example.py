"""The example pipeline as a user runs it: ``python -m minipulsar.pipeline.example --demo-rate N``
in a process of its own against a real broker, run for a while, then stopped with Ctrl-C (SIGINT
to its whole process group, as a terminal sends it).

MINIPULSAR_EXAMPLE_SECONDS sets how many one-second micro-batches it runs before the Ctrl-C
(default 20, as CI runs it; the issue's soak is 300: ``MINIPULSAR_EXAMPLE_SECONDS=300 python -m
pytest tests/spark/test_spark_example.py``)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pulsar
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from tests.helpers import wait_for

RUN_SECONDS = int(os.environ.get("MINIPULSAR_EXAMPLE_SECONDS", "20"))
DEMO_RATE = 200
# Spark's state store maintenance task, every 50 ms instead of every minute: the run then always
# overlaps stopping the session, where a round that fires late logs an IllegalStateException.
EXAMPLE_ENV = {"PYSPARK_SUBMIT_ARGS":
               "--conf spark.sql.streaming.stateStore.maintenanceInterval=50ms pyspark-shell"}


class Output:
    """Every line a child process prints (stdout and stderr), collected by a thread."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._collect, args=(proc.stdout,), daemon=True)
        self._thread.start()

    def _collect(self, stream) -> None:
        for line in stream:
            self.lines.append(line)

    def batches(self) -> int:
        return sum(1 for line in self.lines if line.startswith("batch "))

    def text(self) -> str:
        self._thread.join(30)
        return "".join(self.lines)


def _latest_counts(spark, counts_dir) -> int:
    """The sum of the current count of every (window, key): the row with the highest batchId."""
    rows = spark.read.parquet(str(counts_dir))
    latest = Window.partitionBy("windowStart", "key").orderBy(F.desc("batchId"))
    return rows.withColumn("n", F.row_number().over(latest)).where("n = 1").agg(F.sum("count")).first()[0]


def _latest_totals(official, topic) -> int:
    """The sum of the last total published for every window."""
    reader = official.create_reader(topic, pulsar.MessageId.earliest)
    totals = {}
    while reader.has_message_available():
        body = json.loads(reader.read_next(10000).data())
        totals[body["windowStart"]] = body["count"]
    reader.close()
    return sum(totals.values())


@pytest.mark.timeout(3 * RUN_SECONDS + 300)  # the waits below, and Spark starting twice
def test_example_runs_clean_and_stops_on_ctrl_c(spark, broker, official, topic, tmp_path):
    out = tmp_path / "example"
    proc = subprocess.Popen(
        [sys.executable, "-m", "minipulsar.pipeline.example", "--service-url", broker.url, "--topic", topic,
         "--demo-rate", str(DEMO_RATE), "--output-dir", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, **EXAMPLE_ENV})
    output = Output(proc)
    try:
        wait_for(lambda: output.batches() >= RUN_SECONDS or proc.poll() is not None,
                 f"{RUN_SECONDS} micro-batches", timeout=3 * RUN_SECONDS + 120, interval=0.5)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = output.text()
    assert code == 0, text[-3000:]
    for bad in ("ERROR", "Traceback", "Exception", "StackOverflowError"):
        assert bad not in text, f"{bad!r} in the example's output:\n{text[-3000:]}"
    assert str(out) in text and "stopped" in text
    published = int(re.search(r"demo producer: (\d+) messages published", text).group(1))
    assert published >= RUN_SECONDS * DEMO_RATE // 2
    # Stopping waited for the query to catch up: every message is counted in both outputs.
    assert _latest_counts(spark, out / "counts") == published
    assert _latest_totals(official, f"{topic}-window-totals") == published
