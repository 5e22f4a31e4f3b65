"""What the WebSocket service's choice of path to the topics costs: the bundled client on loopback
(what broker/web/websocket uses, as Pulsar's WebSocketService uses a PulsarClient) against a
prototype that attaches producers and consumers to the broker's topics directly, through the
domain calls the binary protocol's handlers make (AbstractTopic.attach_producer / attach_consumer
with a ProducerConnection / ConsumerConnection of its own).

    python bench/websocket_paths.py [--messages 20000] [--size 100] [--rounds 3]

Both run in one process on the broker's own event loop, with no WebSocket in front, so the figure
is the cost of the path alone: produce (at most 1,000 sends in flight, one message per entry,
as a WebSocket producer sends with batching off) and consume (receive, decode, acknowledge each
message, 1,000 permits). It prints msg/s per path and round, then medians and the ratio.
The prototype is not a product path: it has no partitioned topics, batching, compression,
dead-letter topics, timers or reconnection, which the bundled client brings (docs/websocket.md).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minipulsar.broker.broker import Broker  # noqa: E402
from minipulsar.broker.config import build_config  # noqa: E402
from minipulsar.broker.specs import ConsumerSpec, ProducerSpec, SubscriptionSpec  # noqa: E402
from minipulsar.broker.topic_name import TopicName  # noqa: E402
from minipulsar.client import Client, InitialPosition  # noqa: E402
from minipulsar.proto import PulsarApi_pb2 as api  # noqa: E402
from minipulsar.proto.entries import build_entry, open_entry  # noqa: E402

WINDOW = 1000


class DirectProducerConnection:
    """ProducerConnection of the prototype: receipts resolve futures by sequence id."""

    peer_address = "prototype"
    closed = False

    def __init__(self):
        self.waiting: dict[int, asyncio.Future] = {}

    def publish_started(self, size: int) -> None:
        pass

    def publish_finished(self, size: int) -> None:
        pass

    def send_receipt(self, producer_id, sequence_id, highest_sequence_id, position) -> None:
        self.waiting.pop(sequence_id).set_result(position)

    def send_send_error(self, producer_id, sequence_id, error, message) -> None:
        self.waiting.pop(sequence_id).set_exception(RuntimeError(message))

    def close_producer_by_broker(self, producer_id) -> None:
        pass


class DirectConsumerConnection:
    """ConsumerConnection of the prototype: MESSAGEs land in a queue, decoded by the reader."""

    peer_address = "prototype"
    closed = False

    def __init__(self):
        self.queue: asyncio.Queue = asyncio.Queue()

    def send_message(self, consumer_id, entry, partition, redelivery_count, consumer_epoch, ack_set) -> None:
        self.queue.put_nowait(entry)

    def is_writable(self) -> bool:
        return True

    def send_active_consumer_change(self, consumer_id, active) -> None:
        pass

    def send_reached_end_of_topic(self, consumer_id) -> None:
        pass

    def close_consumer_by_broker(self, consumer_id) -> None:
        pass


async def produce_loopback(broker: Broker, topic: str, n: int, payload: bytes) -> float:
    async with Client(broker.service_url) as client:
        producer = await client.create_producer(topic, max_pending_messages=WINDOW, block_if_queue_full=True)
        started = time.perf_counter()
        futures = [await producer.send_async(payload) for _ in range(n)]
        await asyncio.gather(*futures)
        return n / (time.perf_counter() - started)


async def produce_direct(broker: Broker, topic: str, n: int, payload: bytes) -> float:
    target = await broker.get_topic(TopicName.parse(topic), create=True)
    connection = DirectProducerConnection()
    producer = await target.attach_producer(connection, ProducerSpec(producer_id=0, name=None),
                                            registered=lambda p: None, queued=lambda p: None)
    window = asyncio.Semaphore(WINDOW)
    started = time.perf_counter()
    futures = []
    for sequence_id in range(n):
        await window.acquire()
        metadata = api.MessageMetadata(producer_name=producer.name, sequence_id=sequence_id,
                                       publish_time=int(time.time() * 1000))
        future = connection.waiting[sequence_id] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda _f: window.release())
        futures.append(future)
        producer.publish(sequence_id, sequence_id, 1, build_entry(metadata, payload))
    await asyncio.gather(*futures)
    rate = n / (time.perf_counter() - started)
    producer.close()
    return rate


async def consume_loopback(broker: Broker, topic: str, n: int) -> float:
    async with Client(broker.service_url) as client:
        consumer = await client.subscribe(topic, "loopback", initial_position=InitialPosition.Earliest,
                                          receiver_queue_size=WINDOW)
        started = time.perf_counter()
        for _ in range(n):
            message = await consumer.receive()
            message.data()
            await consumer.acknowledge(message)
        return n / (time.perf_counter() - started)


async def consume_direct(broker: Broker, topic: str, n: int) -> float:
    target = await broker.get_topic(TopicName.parse(topic), create=False)
    connection = DirectConsumerConnection()
    consumer = await target.attach_consumer(connection, SubscriptionSpec(name="direct", initial_position="earliest"),
                                            ConsumerSpec(consumer_id=0, name="direct"))
    started = time.perf_counter()
    consumer.flow(WINDOW)
    granted = 0
    for _ in range(n):
        entry = await connection.queue.get()
        open_entry(entry.data)  # the metadata and payload a WebSocket message is made of
        consumer.subscription.acknowledge_message_ids(consumer, [(entry.position, [])], False)
        granted += 1
        if granted >= WINDOW // 2:
            consumer.flow(granted)
            granted = 0
    rate = n / (time.perf_counter() - started)
    consumer.close()
    return rate


async def one_round(broker: Broker, n: int, size: int, number: int) -> dict[str, float]:
    payload = b"x" * size
    rates = {}
    for path, produce, consume in (("loopback", produce_loopback, consume_loopback),
                                   ("direct", produce_direct, consume_direct)):
        topic = f"persistent://public/default/ws-paths-{path}-{number}"
        rates[f"{path} produce"] = await produce(broker, topic, n, payload)
        rates[f"{path} consume"] = await consume(broker, topic, n)
    return rates


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        config = build_config({"brokerServicePort": 0, "webServicePort": 0, "dataDir": data_dir})
        async with Broker(config) as broker:
            results: dict[str, list[float]] = {}
            for number in range(args.rounds):
                for name, rate in (await one_round(broker, args.messages, args.size, number)).items():
                    results.setdefault(name, []).append(rate)
                    print(f"round {number}: {name:17s} {rate:9,.0f} msg/s")
    print(f"\nmedians of {args.rounds} rounds, {args.messages} messages of {args.size} bytes:")
    for name, rates in results.items():
        print(f"  {name:17s} {statistics.median(rates):9,.0f} msg/s")
    for what in ("produce", "consume"):
        ratio = statistics.median(results[f"direct {what}"]) / statistics.median(results[f"loopback {what}"])
        print(f"  direct / loopback {what}: {ratio:.2f}x")
    print("command: python bench/websocket_paths.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    asyncio.run(main())
