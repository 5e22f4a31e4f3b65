"""A broker process whose data dir lives on a faultfs mount, and the official client around it."""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pulsar

from minipulsar.launcher import BrokerProcess

class BrokerOnFaultFS(BrokerProcess):
    """``python -m minipulsar broker`` (minipulsar.launcher) with its data dir at ``<mount>/data``;
    the log is kept outside the mount (log_dir), so it survives the power loss and is never blocked
    by a trap. Restarts keep the ports."""

    def __init__(self, ffs, log_dir: Path, env: dict | None = None):
        super().__init__(ffs.mountpoint / "data", log_path=log_dir / "broker.log", env=env)
        self.ffs = ffs

    def start(self, timeout: float | None = None, wait: bool = True) -> "BrokerOnFaultFS":
        """Start and wait until ready; then the start-up must have logged no ERROR or CRITICAL
        line: recovery repairs what a power loss may leave (torn tails, missing entries of
        unsynced folders) and says so at WARNING at most; an error is damage it could not repair."""
        super().start(timeout, wait)
        if wait:
            errors = [line for line in self._log_since_start().splitlines() if " ERROR " in line or " CRITICAL " in line]
            assert not errors, "the broker reported errors while starting:\n" + "\n".join(errors[:20])
        return self

    def power_loss(self, torn: bool = False, seed: int | None = None) -> dict:
        """SIGKILL the broker, then lose everything unsynced. A broker thread blocked in the file
        system (a trap) cannot die before the power loss answers it: wait only after."""
        if self.running:
            self.proc.send_signal(signal.SIGKILL)
        report = self.ffs.power_loss(torn=torn, seed=seed)
        if self.proc is not None:
            self.proc.wait(15)
        return report

    def kill_for_cleanup(self) -> None:
        """At teardown: kill, and release a broker blocked by a trap so it can die."""
        if self.running:
            self.proc.kill()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.ffs.power_loss()
                self.proc.wait(10)


def client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def produce(url: str, topic: str, count: int, prefix: str = "m") -> list[bytes]:
    """Send ``count`` messages one by one; the list of those that got a receipt (all of them, or
    an exception)."""
    c = client(url)
    try:
        producer = c.create_producer(topic, batching_enabled=False, send_timeout_millis=10000)
        acked = []
        for i in range(count):
            payload = f"{prefix}-{i}".encode()
            producer.send(payload)
            acked.append(payload)
        producer.close()
        return acked
    finally:
        c.close()


class AsyncProducer:
    """Sends without waiting; ``acked`` holds, in send order, the payloads that got a receipt."""

    def __init__(self, url: str, topic: str):
        self.client = client(url)
        self.producer = self.client.create_producer(topic, batching_enabled=False, send_timeout_millis=30000,
                                                    max_pending_messages=10000, block_if_queue_full=True)
        self.sent: list[bytes] = []
        self.acked: list[bytes] = []
        self.failed: list[bytes] = []

    def send(self, count: int, prefix: str = "m") -> None:
        for i in range(count):
            payload = f"{prefix}-{len(self.sent)}".encode()
            self.sent.append(payload)
            self.producer.send_async(payload, self._callback(payload))

    def _callback(self, payload: bytes):
        def done(result, _msg_id):
            (self.acked if result == pulsar.Result.Ok else self.failed).append(payload)
        return done

    def close(self) -> None:
        close_without_broker(self.client)


def close_without_broker(c: pulsar.Client) -> None:
    """Close a client whose broker was killed: closing its producers cannot reach the broker, and
    the official client answers that with an error (NotConnected) unless it saw the connection go
    first, a race that is no failure of the test."""
    try:
        c.close()
    except pulsar.PulsarException:
        pass


def read_all(url: str, topic: str, quiet_ms: int = 1500) -> list[bytes]:
    """Every message of the topic from the earliest, through a Reader."""
    c = client(url)
    try:
        reader = c.create_reader(topic, pulsar.MessageId.earliest)
        got = []
        while True:
            try:
                got.append(reader.read_next(quiet_ms).data())
            except pulsar.Timeout:
                return got
    finally:
        c.close()


def check_acked_survived(acked: list[bytes], sent: list[bytes], found: list[bytes]) -> None:
    """Every acknowledged message is there, in order, once; nothing that was never sent; what
    is there beyond the acknowledged ones is the next sent ones, in order."""
    missing = [m for m in acked if m not in set(found)]
    assert not missing, f"{len(missing)} acknowledged messages lost (of {len(acked)}), first {missing[:5]}; " \
                        f"found {len(found)}: {found[:5]}..."
    assert found == sent[:len(found)], f"out of order, duplicated or unknown: found {found[:20]}"


SUBSCRIPTION = "keeper"


def subscribe(url: str, topic: str, subscription: str = SUBSCRIPTION) -> None:
    """Create a durable subscription from the earliest message (it keeps the topic's messages:
    without one, a restart trims every sealed ledger, as in Pulsar)."""
    c = client(url)
    try:
        c.subscribe(topic, subscription, initial_position=pulsar.InitialPosition.Earliest).close()
    finally:
        c.close()


def consume_all(url: str, topic: str, subscription: str = SUBSCRIPTION, ack_first: int = 0,
                quiet_ms: int = 1500) -> list[bytes]:
    """Every message the subscription delivers until it stays quiet; the first ``ack_first`` are
    acknowledged (one by one)."""
    c = client(url)
    try:
        consumer = c.subscribe(topic, subscription, initial_position=pulsar.InitialPosition.Earliest)
        got = []
        while True:
            try:
                msg = consumer.receive(quiet_ms)
            except pulsar.Timeout:
                return got
            got.append(msg.data())
            if len(got) <= ack_first:
                consumer.acknowledge(msg)
    finally:
        c.close()
