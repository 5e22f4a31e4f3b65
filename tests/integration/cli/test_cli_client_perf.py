"""`minipulsar client produce|consume` and `minipulsar perf produce|consume`, run as the user runs
them (`python -m minipulsar ...` in a child process) against an in-process broker, with the
official client on the other end."""
from __future__ import annotations

import signal
import subprocess
import sys

import pulsar
import pytest

from minipulsar.cli import main
from minipulsar.launcher import free_port
from tests import ROOT
from tests.helpers import wait_for

TIMEOUT = 60  # seconds a CLI run may take before the test fails


def cli(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minipulsar", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def ok(result: subprocess.CompletedProcess) -> str:
    """The run's stdout, after checking it exited with 0 and printed no traceback."""
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


def count_messages(client: pulsar.Client, topic: str) -> int:
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    count = 0
    while reader.has_message_available():
        reader.read_next(5000)
        count += 1
    reader.close()
    return count


# ---- client ----------------------------------------------------------------------------------

def test_client_produce_reaches_the_official_client(broker, official, topic):
    consumer = official.subscribe(topic, "sub")
    out = ok(cli("client", "--url", broker.url, "produce", topic, "-m", "hello", "-m", "a,b", "-n", "3",
                 "-k", "key-1", "-p", "x=1,y=2"))
    assert "9 messages successfully produced" in out
    got = [consumer.receive(5000) for _ in range(9)]
    assert [m.data() for m in got] == [b"hello", b"a", b"b"] * 3
    assert {m.partition_key() for m in got} == {"key-1"}
    assert got[0].properties() == {"x": "1", "y": "2"}


def test_client_consume_prints_what_the_official_client_produced(broker, official, topic):
    producer = official.create_producer(topic)
    for i in range(3):
        producer.send(f"msg-{i}".encode(), partition_key="k", properties={"i": str(i)})
    out = ok(cli("client", "--url", broker.url, "consume", topic, "-s", "cli-sub", "-p", "Earliest", "-n", "3"))
    assert out.count("----- got message -----") == 3
    assert "key:[k], properties:[i=0], content:msg-0" in out
    assert out.index("content:msg-0") < out.index("content:msg-1") < out.index("content:msg-2")
    assert "3 messages successfully consumed" in out
    wait_for(lambda: broker.subscription_stats(topic, "cli-sub")["msgBacklog"] == 0, "the CLI's acks")


def test_client_produce_without_messages_is_a_usage_error(broker, topic):
    result = cli("client", "--url", broker.url, "produce", topic)
    assert result.returncode == 2
    assert "--messages or --files" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ("client", "--url", "{unreachable}", "--operation-timeout", "2", "produce", "{topic}", "-m", "x"),
    ("client", "--url", "{unreachable}", "--operation-timeout", "2", "consume", "{topic}", "-s", "s"),
    ("client", "--url", "http://127.0.0.1:8080", "produce", "{topic}", "-m", "x"),
    ("perf", "produce", "{topic}", "-u", "{unreachable}", "--operation-timeout", "2"),
    ("perf", "consume", "{topic}", "-u", "{unreachable}", "--operation-timeout", "2"),
], ids=["client-produce", "client-consume", "not-pulsar-url", "perf-produce", "perf-consume"])
def test_a_bad_url_fails_with_one_line_and_no_traceback(topic, args):
    unreachable = f"pulsar://127.0.0.1:{free_port()}"
    result = cli(*(a.format(unreachable=unreachable, topic=topic) for a in args))
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("minipulsar "), result.stderr
    assert "127.0.0.1" in errors[0]


# ---- perf ------------------------------------------------------------------------------------

def test_perf_produce_publishes_and_reports_rates_and_latencies(broker, topic):
    out = ok(cli("perf", "produce", topic, "-u", broker.url, "-m", "2000", "-r", "5000", "-s", "100", "-db",
                 "--warmup-time", "0", "--report-interval", "0.1"))
    assert broker.topic_stats(topic)["numberOfEntries"] == 2000  # -db: one entry per message
    assert "Created 1 producers" in out
    rate_lines = [line for line in out.splitlines() if "Throughput produced:" in line]
    assert rate_lines and all("msg/s" in line and "Mbit/s" in line for line in rate_lines)
    assert any("Latency: mean:" in line and "99.9pct:" in line and "Max:" in line for line in rate_lines)
    assert "Aggregated throughput stats --- 2000 records sent" in out
    summary = next(line for line in out.splitlines() if "Aggregated latency stats" in line)
    assert "med:" in summary and "95pct:" in summary and "99pct:" in summary and "99.9pct:" in summary


@pytest.mark.parametrize("client_kind", ["bundled", "official"])
def test_perf_produce_to_several_topics_with_batching(broker, official, topic, client_kind):
    topics = [f"{topic}-a", f"{topic}-b"]
    out = ok(cli("perf", "produce", *topics, "-u", broker.url, "-m", "1000", "-r", "0", "-n", "2", "-s", "64",
                 "--client", client_kind))
    assert "Created 4 producers" in out
    assert "Aggregated throughput stats --- 1000 records sent" in out
    assert sum(count_messages(official, t) for t in topics) == 1000


def test_perf_consume_receives_and_reports(broker, official, topic):
    producer = official.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
    results = []
    for _ in range(2000):
        producer.send_async(b"x" * 100, lambda result, _id: results.append(result))
    producer.flush()
    wait_for(lambda: len(results) == 2000, "the receipts of 2000 messages")
    assert set(results) == {pulsar.Result.Ok}
    out = ok(cli("perf", "consume", topic, "-u", broker.url, "-s", "perf-sub", "-sp", "Earliest", "-m", "2000",
                 "-r", "5000", "--report-interval", "0.1"))
    rate_lines = [line for line in out.splitlines() if "Throughput received:" in line]
    assert rate_lines and all("msg/s" in line and "Mbit/s" in line and "Latency: mean:" in line
                              for line in rate_lines)
    assert "Aggregated throughput stats --- 2000 records received" in out
    assert "Aggregated latency stats --- Latency: mean:" in out
    wait_for(lambda: broker.subscription_stats(topic, "perf-sub")["msgBacklog"] == 0, "the perf consumer's acks")


def test_perf_consume_stops_at_test_duration(broker, topic):
    out = ok(cli("perf", "consume", topic, "-u", broker.url, "-time", "0.5"))
    assert "Aggregated throughput stats --- 0 records received" in out


def test_perf_produce_stops_on_ctrl_c_with_its_summary(broker, topic):
    proc = subprocess.Popen([sys.executable, "-m", "minipulsar", "perf", "produce", topic, "-u", broker.url,
                             "-r", "1000", "--report-interval", "0.2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stdout:  # wait for the first rate line: the run is under way
            seen.append(line)
            if "Throughput produced:" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(seen) + rest
    assert proc.returncode == 0, err
    assert "Aggregated throughput stats" in out and "Aggregated latency stats" in out
    assert "Traceback" not in out + err


# ---- every verb keeps --help -----------------------------------------------------------------

@pytest.mark.parametrize("verb", [("broker",), ("standalone",), ("client",), ("client", "produce"),
                                  ("client", "consume"), ("perf",), ("perf", "produce"), ("perf", "consume")])
def test_every_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*verb, "--help"])
    assert exit_info.value.code == 0
    assert "usage: minipulsar " + " ".join(verb) in capsys.readouterr().out
