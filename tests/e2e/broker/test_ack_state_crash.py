"""PIP-299 under kill -9: the pause bounds how many acknowledged messages come back after a crash.

A Shared consumer acknowledges two of every three messages (holes that never close) while the
broker is killed at a random moment. After the kill the cursor state on disk is read directly
(what the last persist recorded); after a restart every redelivered message that had been
acknowledged before the kill is a duplicate. Every duplicate must be an acknowledgement the last
persist could not record; with dispatcherPauseOnAckStatePersistentEnabled the duplicates stay
far fewer than without it. Both figures are printed (pytest -s).
"""
import asyncio
import random
import signal
import threading
import time

import pulsar

from minipulsar.broker.topic_name import TopicName
from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory, Position

TOPIC = "persistent://public/default/pause-crash"
ROUNDS = 2
PROCESSING_SECONDS = 0.005  # the consumer handles ~200 msg/s: slower than the 1/s cursor persists


def consume_with_holes(url: str, stop: threading.Event, acked: set, received: set) -> None:
    client = pulsar.Client(url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=100)
        while not stop.is_set():
            try:
                msg = consumer.receive(100)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                return  # the broker died
            mid = msg.message_id()
            position = (mid.ledger_id(), mid.entry_id())
            received.add(position)
            time.sleep(PROCESSING_SECONDS)  # not synchronisation: the consumer's processing time (load shape)
            if int(msg.data()) % 3:
                consumer.acknowledge(msg)
                acked.add(position)
    finally:
        client.close()


def recorded_acks(data_dir, positions) -> set:
    """The acknowledged positions as the last persist stored them, read from disk."""
    async def read():
        factory = ManagedLedgerFactory(data_dir / "ledgers", ManagedLedgerConfig())
        await factory.start()
        try:
            ledger = await factory.open(TopicName.parse(TOPIC).storage_name)
            cursor = ledger.cursors["sub"]
            return {p for p in positions if cursor.is_deleted(Position(*p))}
        finally:
            await factory.close()
    return asyncio.run(read())


def crash_round(broker_process, tmp_path, enabled: bool, seed: int) -> tuple[int, int]:
    data_dir = tmp_path / f"{enabled}-{seed}"
    env = {"MINIPULSAR_managedLedgerMaxUnackedRangesToPersist": "50",
           "MINIPULSAR_dispatcherPauseOnAckStatePersistentEnabled": str(enabled).lower()}
    proc = broker_process(data_dir=data_dir, env=env)
    client = pulsar.Client(proc.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared).close()
    producer = client.create_producer(TOPIC, batching_enabled=False, block_if_queue_full=True)
    for i in range(1500):
        producer.send_async(str(i).encode(), None)
    producer.flush()
    client.close()

    stop, acked, received = threading.Event(), set(), set()
    worker = threading.Thread(target=consume_with_holes, args=(proc.url, stop, acked, received), daemon=True)
    worker.start()
    time.sleep(random.Random(seed).uniform(3.0, 5.0))  # not synchronisation: the random crash point under test
    proc.proc.send_signal(signal.SIGKILL)
    proc.proc.wait()
    stop.set()
    worker.join(10)
    acked_before_kill = set(acked)

    recorded = recorded_acks(data_dir, received)
    proc = broker_process(data_dir=data_dir, port=proc.port, env=env)
    client = pulsar.Client(proc.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1000)
    redelivered = set()
    while True:
        try:
            mid = consumer.receive(1500).message_id()
        except pulsar.Timeout:
            break
        redelivered.add((mid.ledger_id(), mid.entry_id()))
    client.close()
    proc.stop()
    duplicates = redelivered & acked_before_kill
    not_recorded = acked_before_kill - recorded
    assert duplicates <= not_recorded, "a duplicate the last persist had recorded as acknowledged"
    assert not (recorded - acked_before_kill), "the cursor recorded an ack the consumer never sent"
    return len(duplicates), len(acked_before_kill)


def test_pause_bounds_duplicates_after_kill_9(broker_process, tmp_path):
    on = [crash_round(broker_process, tmp_path, True, seed) for seed in range(ROUNDS)]
    off = [crash_round(broker_process, tmp_path, False, seed) for seed in range(ROUNDS)]
    print(f"\nduplicates after kill -9 (duplicates / acked before the kill), cap 50:"
          f"\n  pause on : {on}\n  pause off: {off}")
    assert sum(d for d, _ in on) < sum(d for d, _ in off)
