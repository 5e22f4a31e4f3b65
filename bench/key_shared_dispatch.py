"""The broker's own CPU per entry for Key_Shared and Exclusive dispatch, without sockets or clients.

    python bench/key_shared_dispatch.py                       # 4 consumers, 1,000 keys, 100,000 entries
    python bench/key_shared_dispatch.py --entries 50000 --repeat 5

bench/key_shared_procs.py measures what users see (official clients in separate processes), but on
a 2-core machine the clients and the broker share the cores and its ratio moves by half from one
run to the next. This one drives the real topic, managed ledger, cursor, subscription and
dispatcher in one process (the dispatch harness of the unit tests) with a deterministic client
stand-in: each consumer takes up to --take of the messages it was sent, acknowledges them one by
one (individual acks, as the official client's grouped ACK carries them) and grants permits back
when half of its receiver queue is consumed, as the client's FLOW does. MESSAGE frames are still
encoded (proto/hot_commands.encode_message) so the figure includes framing. The same workload runs
every repeat, so the minimum process CPU time over --repeat runs is a stable per-entry cost even
on a noisy machine. Prints microseconds of broker CPU per entry for Exclusive (one consumer) and
Key_Shared (--consumers), and their ratio.
"""
from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from dispatch_harness import Harness, RecordingConnection, entry_bytes, settle  # noqa: E402

from minipulsar.proto import PulsarApi_pb2 as api  # noqa: E402
from minipulsar.proto.hot_commands import encode_message  # noqa: E402

RECEIVER_QUEUE = 1000  # the official client's default receiver_queue_size


class EncodingConnection(RecordingConnection):
    """Records positions like the harness's connection, and encodes each MESSAGE as a real one would."""

    def send_message(self, consumer_id, entry, partition, redelivery_count, consumer_epoch, ack_set) -> None:
        encode_message(consumer_id, entry.position.ledger_id, entry.position.entry_id, partition,
                       redelivery_count, consumer_epoch, ack_set, entry.data)
        self.received.append(entry.position)


async def publish(harness: Harness, entries: int, keys: int) -> None:
    """entries keyed entries, appended 1,000 at a time (one group commit each)."""
    topic = harness.topic
    for start in range(0, entries, 1000):
        await asyncio.gather(*(topic.publish(entry_bytes(f"key-{i % keys}", i))
                               for i in range(start, min(entries, start + 1000))))


def attach(harness: Harness, subscription, name: str, sub_type: int):
    connection = EncodingConnection(name)
    consumer = harness.consumer(subscription, name, sub_type, permits=RECEIVER_QUEUE)
    consumer.connection = connection
    connection.consumer = consumer
    subscription.add_consumer(consumer)
    return consumer


async def drain(harness: Harness, subscription, consumers: list, total: int, take: int) -> None:
    """Consume and acknowledge until total entries are acknowledged, consumers taking turns."""
    consumed_since_flow = {c: 0 for c in consumers}
    acknowledged = 0
    while acknowledged < total:
        await settle(subscription.dispatcher, rounds=2)
        progress = 0
        for consumer in consumers:
            received = consumer.connection.received
            batch, received[:] = received[:take], received[take:]
            if not batch:
                continue
            subscription.acknowledge_message_ids(consumer, [(position, []) for position in batch], False)
            acknowledged += len(batch)
            progress += len(batch)
            consumed_since_flow[consumer] += len(batch)
            if consumed_since_flow[consumer] >= RECEIVER_QUEUE // 2:
                consumer.flow(consumed_since_flow[consumer])
                consumed_since_flow[consumer] = 0
        if not progress:
            raise RuntimeError(f"dispatch stalled at {acknowledged} of {total} acknowledged")


async def one_run(folder: Path, sub_type: int, consumers: int, args) -> float:
    """Broker CPU seconds to dispatch and acknowledge the backlog for one subscription type."""
    harness = await Harness(folder, journalSyncData="false").open()
    try:
        subscription = await harness.subscription("bench")
        await publish(harness, args.entries, args.keys)
        started = time.process_time()
        attached = [attach(harness, subscription, f"c{i}", sub_type) for i in range(consumers)]
        await drain(harness, subscription, attached, args.entries, args.take)
        return time.process_time() - started
    finally:
        await harness.close()


def best_of(sub_type: int, consumers: int, args) -> float:
    runs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            runs.append(asyncio.run(one_run(Path(folder), sub_type, consumers, args)))
    return min(runs) / args.entries * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--take", type=int, default=100, help="messages a consumer handles per turn")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    exclusive = best_of(api.CommandSubscribe.Exclusive, 1, args)
    print(f"Exclusive: {exclusive:.1f} us of broker CPU per entry (best of {args.repeat})", flush=True)
    key_shared = best_of(api.CommandSubscribe.Key_Shared, args.consumers, args)
    print(f"Key_Shared x{args.consumers}: {key_shared:.1f} us of broker CPU per entry (best of {args.repeat})")
    print(f"Key_Shared / Exclusive cost: {key_shared / exclusive:.2f}")


if __name__ == "__main__":
    main()
