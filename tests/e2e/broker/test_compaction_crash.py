"""kill -9 during compaction: after a restart the topic has the old compacted view or the new one,
never a part of one, no leftover files, and a read_compacted reader sees the latest value of every
key. The broker runs as a process; the kills land at states the test waits for: while phase one
reads, and while phase two writes the new compacted ledger (its .tmp file exists). The moments
between renaming the new ledger into place, moving the compaction cursor and deleting the old
ledger are too short to hit by waiting; the files they leave are planted by hand instead."""
import shutil
import signal
import uuid

import pulsar
import pytest
import requests

from minipulsar.launcher import free_port
from tests.helpers import wait_for

KEYS = 400


def web(port: int, topic: str) -> str:
    return f"http://127.0.0.1:{port}/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}"


def produce_round(url: str, topic: str, round_no: int) -> dict[str, bytes]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                          batching_max_publish_delay_ms=5, block_if_queue_full=True)
        latest = {}
        for i in range(20 * KEYS):
            key, value = f"k{i % KEYS}", f"r{round_no}-{i}".encode() * 20
            producer.send_async(value, None, partition_key=key)
            latest[key] = value
        producer.flush()
        producer.close()
        return latest
    finally:
        client.close()


def read_view(url: str, topic: str) -> dict[str, bytes]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        view = {}
        while reader.has_message_available():
            message = reader.read_next(10000)
            view[message.partition_key()] = message.data()
        reader.close()
        return view
    finally:
        client.close()


def compaction_files(data_dir) -> list[str]:
    return sorted(p.name for p in (data_dir / "ledgers").rglob("compacted-*"))


def wait_status(port: int, topic: str, wanted: str) -> None:
    wait_for(lambda: requests.get(web(port, topic) + "/compaction", timeout=10).json()["status"] == wanted,
             f"compaction status {wanted}", timeout=120)


def trigger_compaction(port: int, topic: str) -> None:
    requests.put(web(port, topic) + "/compaction", timeout=10).raise_for_status()


def compact(port: int, topic: str) -> None:
    """Trigger a compaction and wait until it succeeded."""
    trigger_compaction(port, topic)
    wait_status(port, topic, "SUCCESS")


def compacted_ledger(port: int, topic: str) -> dict:
    return requests.get(web(port, topic) + "/internalStats", timeout=10).json()["compactedLedger"]


@pytest.mark.parametrize("kill_when", ["phase-one", "phase-two"])
def test_kill_during_compaction_keeps_a_whole_view(broker_process, tmp_path, kill_when):
    data_dir = tmp_path / "data"
    port = free_port()
    broker = broker_process(data_dir, web_port=port)
    topic = f"persistent://public/default/crash-{uuid.uuid4().hex[:8]}"
    latest = produce_round(broker.url, topic, 1)
    compact(port, topic)
    first_ledger = compacted_ledger(port, topic)["ledgerId"]
    latest.update(produce_round(broker.url, topic, 2))

    trigger_compaction(port, topic)
    if kill_when == "phase-two":
        wait_for(lambda: any(name.endswith(".tmp") for name in compaction_files(data_dir)),
                 "phase two writes the new compacted ledger", timeout=60, interval=0.001)
    broker.stop(sig=signal.SIGKILL)

    broker = broker_process(data_dir, web_port=port)
    assert read_view(broker.url, topic) == latest, "after the restart the view is whole"
    stats = compacted_ledger(port, topic)
    assert stats["ledgerId"] in (first_ledger, first_ledger + 1)
    files = compaction_files(data_dir)
    assert files == [f"compacted-{stats['ledgerId']:012d}.ledger"], "no half-written or superseded ledger is left"

    compact(port, topic)
    assert read_view(broker.url, topic) == latest
    assert compacted_ledger(port, topic)["entries"] > 0
    assert broker.stop() == 0


def test_restart_keeps_only_the_ledger_the_cursor_names(broker_process, tmp_path):
    """A kill right after the rename (the cursor still names the old ledger) leaves a complete newer
    ledger; a kill after the cursor moved leaves the older one: both are deleted at start-up."""
    data_dir = tmp_path / "data"
    port = free_port()
    broker = broker_process(data_dir, web_port=port)
    topic = f"persistent://public/default/crash-{uuid.uuid4().hex[:8]}"
    latest = produce_round(broker.url, topic, 1)
    compact(port, topic)
    latest.update(produce_round(broker.url, topic, 2))
    compact(port, topic)
    broker.stop(sig=signal.SIGKILL)
    [current] = [p for p in (data_dir / "ledgers").rglob("compacted-*.ledger")]
    current_id = int(current.name.split("-")[1].split(".")[0])
    for stray in (current_id - 1, current_id + 1):
        shutil.copy(current, current.with_name(f"compacted-{stray:012d}.ledger"))

    broker = broker_process(data_dir, web_port=port)
    assert read_view(broker.url, topic) == latest
    assert compaction_files(data_dir) == [current.name]
