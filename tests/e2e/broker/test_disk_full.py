"""Disk full, end to end: a broker process whose data directory is a small tmpfs. Producers get
errors once it is full, nothing acknowledged is lost, the broker keeps serving, and it takes
messages again by itself once space returns; a kill -9 afterwards loses nothing acknowledged.

The file system is a real size-limited tmpfs (mount needs CAP_SYS_ADMIN, which this project's
machines have); where mounting is refused the test is skipped with that reason, and the
RLIMIT_FSIZE test in tests/unit/storage/test_faults.py still covers the storage side."""
import os
import signal
import subprocess
import time
import uuid

import pulsar
import pytest

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from tests.helpers import RawConnection, storage_checkpoints, wait_for

Type = api.BaseCommand.Type

# The freed room must hold what the full disk kept in the journal only (at most one write-behind
# round, 16 MB): the entries are then written behind it and the journal cut (docs/storage.md).
SIZE_MB = 48
FILLER_MB = 24
PAYLOAD = 2048


@pytest.fixture
def small_disk(tmp_path):
    mount_point = tmp_path / "data"  # the broker's data directory itself (its log stays outside)
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here: {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill_until_refused(url: str, topic: str) -> tuple[list[int], api.BaseCommand]:
    """Publish one message at a time over a raw connection until the broker answers with something
    other than a receipt; returns the acknowledged sequence ids and that answer."""
    raw = RawConnection(url)
    raw.sock.settimeout(30)
    try:
        assert raw.connect().type == Type.CONNECTED
        raw.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1, producer_name="filler")))
        assert raw.receive().type == Type.PRODUCER_SUCCESS
        acked = []
        for sequence_id in range(100_000):
            metadata = api.MessageMetadata(producer_name="filler", sequence_id=sequence_id,
                                           publish_time=int(time.time() * 1000))
            payload = sequence_id.to_bytes(4, "big") + b"x" * PAYLOAD
            raw.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=sequence_id)),
                     build_headers_and_payload(metadata, payload))
            reply = raw.receive()
            if reply.type != Type.SEND_RECEIPT:
                return acked, reply
            acked.append(sequence_id)
        raise AssertionError(f"{SIZE_MB} MB took 100,000 messages of {PAYLOAD} B")
    finally:
        raw.close()


def keep_subscription(url: str, topic: str) -> None:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest).close()
    finally:
        client.close()


def read_all(url: str, topic: str) -> list[int]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        values = []
        while reader.has_message_available():
            values.append(int.from_bytes(reader.read_next(10000).data()[:4], "big"))
        reader.close()
        return values
    finally:
        client.close()


def send_one(url: str, topic: str, value: int) -> bool:
    client = pulsar.Client(url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
        producer.send(value.to_bytes(4, "big"))
        producer.close()
        return True
    except pulsar.PulsarException:
        return False
    finally:
        client.close()


def test_full_disk_refuses_then_recovers_and_loses_nothing_acknowledged(broker_process, small_disk):
    filler = small_disk / "filler"
    with open(filler, "wb") as f:
        f.write(os.urandom(FILLER_MB * 1024 * 1024))
    data_dir = small_disk
    broker = broker_process(data_dir)
    topic = f"persistent://public/default/full-{uuid.uuid4().hex[:8]}"
    keep_subscription(broker.url, topic)  # without one, retention 0 lets consumed ledgers go (as Pulsar)
    acked, refusal = fill_until_refused(broker.url, topic)
    assert refusal.type == Type.SEND_ERROR and refusal.send_error.error == api.PersistenceError, refusal
    assert len(acked) > 1000, "the disk filled far too early"
    assert broker.proc.poll() is None, "a full disk must not end the broker"
    assert read_all(broker.url, topic)[:len(acked)] == acked, "everything acknowledged is readable"

    checkpoints = storage_checkpoints(broker.web_url)
    filler.unlink()  # space returns; nothing restarts the broker
    wait_for(lambda: send_one(broker.url, topic, 10**6), "the broker takes messages again", timeout=60)
    stored = read_all(broker.url, topic)
    assert set(acked) <= set(stored) and 10**6 in stored
    # The entries the full disk kept in the journal only are written behind it and checkpointed at
    # once, so the journal stops holding a second copy: a restart before that would need room to
    # write them into their segments (docs/storage.md).
    wait_for(lambda: storage_checkpoints(broker.web_url) > checkpoints, "a checkpoint after the disk filled", timeout=30)

    broker.stop(sig=signal.SIGKILL)
    broker = broker_process(data_dir, port=broker.port)
    after_crash = read_all(broker.url, topic)
    assert set(acked) <= set(after_crash) and 10**6 in after_crash
    assert [v for v in after_crash if v in set(acked)][:len(acked)] == acked, "acknowledged order holds"
