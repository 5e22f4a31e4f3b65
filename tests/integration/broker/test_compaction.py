"""Topic compaction with the official client: read_compacted readers and consumers see the latest
value per key (deletions and keyless messages gone, original message ids kept), batched and
unbatched, TableView, compaction racing producers, trimmed ledgers, the size threshold, the REST
trigger and status, and the compacted ledger files."""
import threading
from pathlib import Path

import pulsar
import pytest
import requests

from minipulsar.broker.topic_name import TopicName
from tests.helpers import drain, wait_for


def rest_base(broker, topic: str) -> str:
    return f"{broker.broker.web_service_url}/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}"


def compact(broker, topic: str) -> dict:
    """Trigger a compaction over REST and wait (on its status) until it ends."""
    base = rest_base(broker, topic)
    assert requests.put(base + "/compaction", timeout=10).status_code == 204
    status = {}

    def finished():
        status.update(requests.get(base + "/compaction", timeout=10).json())
        return status["status"] != "RUNNING"
    wait_for(finished, "the compaction ends")
    assert status == {"status": "SUCCESS", "lastError": ""}
    return requests.get(base + "/internalStats", timeout=10).json()["compactedLedger"]


def read_view(client, topic: str) -> list:
    """Everything a read_compacted reader from the earliest position gets, until the broker says
    nothing more is available."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(5000))
    reader.close()
    return got


def produce(client, topic: str, items: list[tuple[str | None, bytes]], batching: bool) -> dict:
    """Send (key, value) pairs; returns key -> (value, message id) of each key's last message."""
    producer = client.create_producer(topic, batching_enabled=batching, batching_max_publish_delay_ms=10,
                                      batching_max_messages=50, block_if_queue_full=True)
    receipts = {}

    def remember(key, value):
        def done(result, message_id):
            assert result == pulsar.Result.Ok, result
            receipts[key] = (value, str(message_id))
        return done
    for key, value in items:
        kwargs = {"partition_key": key} if key is not None else {}
        producer.send_async(value, remember(key, value), **kwargs)
    producer.flush()
    producer.close()
    return receipts


def workload(rounds: int, keys: int) -> list[tuple[str | None, bytes]]:
    items = [(f"k{i % keys}", f"v{i}".encode()) for i in range(rounds * keys)]
    items += [("k1", b""), (None, b"no key")]  # a deletion and a message without a key
    return items


@pytest.mark.parametrize("batching", [False, True])
def test_reader_sees_latest_value_per_key_with_original_ids(client, broker, topic, batching):
    receipts = produce(client, topic, workload(rounds=5, keys=20), batching)
    compacted = compact(broker, topic)
    assert compacted["ledgerId"] >= 0 and compacted["entries"] > 0
    view = read_view(client, topic)
    expected = {key: value for key, (value, _) in receipts.items() if key is not None and value}
    assert {m.partition_key(): m.data() for m in view} == expected
    assert len(view) == len(expected) == 19, "one message per surviving key, nothing else"
    assert {m.partition_key(): str(m.message_id()) for m in view} == {
        key: receipts[key][1] for key in expected}, "the compacted view keeps the original message ids"


def test_consumer_reads_view_then_the_rest_of_the_topic(client, broker, topic):
    produce(client, topic, workload(rounds=3, keys=10), batching=False)
    compact(broker, topic)
    produce(client, topic, [("k0", b"after-1"), ("k0", b"after-2")], batching=False)
    consumer = client.subscribe(topic, "rc", is_read_compacted=True,
                                initial_position=pulsar.InitialPosition.Earliest)
    got = [(m.partition_key(), m.data()) for m in drain(consumer, ack=True)]
    assert got[:9] == [(f"k{i}", f"v{20 + i}".encode()) for i in range(10) if i != 1]
    assert got[9:] == [("k0", b"after-1"), ("k0", b"after-2")], "after the horizon every message comes"


def test_second_compaction_merges_old_view_and_new_messages(client, broker, topic):
    produce(client, topic, [(f"k{i}", b"old") for i in range(10)], batching=False)
    first = compact(broker, topic)
    produce(client, topic, [("k3", b"new"), ("k4", b""), ("k10", b"added")], batching=True)
    second = compact(broker, topic)
    assert second["ledgerId"] != first["ledgerId"]
    view = {m.partition_key(): m.data() for m in read_view(client, topic)}
    assert view == {**{f"k{i}": b"old" for i in range(10) if i != 4}, "k3": b"new", "k10": b"added"}
    folder = broker.broker.topics[str(TopicName.parse(topic))].ledger.folder
    files = sorted(p.name for p in Path(folder).glob("compacted-*"))
    assert files == [f"compacted-{second['ledgerId']:012d}.ledger"], "the old compacted ledger is deleted"


def test_table_view_over_a_compacted_topic(client, broker, topic):
    produce(client, topic, workload(rounds=4, keys=15), batching=True)
    compact(broker, topic)
    table = client.create_table_view(topic)  # returns once it has read the topic to its end
    try:
        contents = {}
        table.for_each(lambda key, value: contents.__setitem__(key, value))
        assert contents == {f"k{i}": f"v{45 + i}".encode() for i in range(15) if i != 1}
        assert table.get("k1") is None
    finally:
        table.close()


def test_shared_read_compacted_is_refused(client, topic):
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "sh", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True)


def test_compaction_races_producers(client, broker, topic):
    """Producers keep writing while compactions run back to back; the final view is the latest
    value of every key, whatever each compaction's horizon was."""
    stop = threading.Event()
    last: dict[str, bytes] = {}
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=2)

    def write():
        i = 0
        while not stop.is_set():
            key, value = f"k{i % 50}", f"v{i}".encode()
            producer.send(value, partition_key=key)
            last[key] = value
            i += 1
    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(4):
            compact(broker, topic)
    finally:
        stop.set()
        writer.join(10)
    view = {m.partition_key(): m.data() for m in read_view(client, topic)}
    assert view == last


def test_view_survives_trimming_of_the_compacted_ledgers(broker_factory, topic):
    broker = broker_factory(managedLedgerMaxEntriesPerLedger=10)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "all")
        produce(client, topic, [(f"k{i % 5}", f"v{i}".encode()) for i in range(40)], batching=False)
        compact(broker, topic)
        drain(consumer, ack=True)
        ledger = broker.broker.topics[str(TopicName.parse(topic))].ledger
        first_kept = ledger.ledger_ids[0]
        consumer.close()
        client.create_producer(topic).send(b"rolls", partition_key="k9")
        wait_for(lambda: ledger.ledger_ids[0] > first_kept or ledger.number_of_entries < 40,
                 "consumed ledgers are trimmed")
        view = {m.partition_key(): m.data() for m in read_view(client, topic)}
        assert view == {**{f"k{i}": f"v{35 + i}".encode() for i in range(5)}, "k9": b"rolls"}
    finally:
        client.close()


def test_threshold_compacts_automatically(broker_factory, topic):
    broker = broker_factory(brokerServiceCompactionThresholdInBytes=2000,
                            brokerServiceCompactionMonitorIntervalInSeconds=1)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        produce(client, topic, [(f"k{i % 3}", b"x" * 100) for i in range(60)], batching=False)
        base = rest_base(broker, topic)
        wait_for(lambda: requests.get(base + "/compaction", timeout=10).json()["status"] == "SUCCESS",
                 "the monitor compacted the topic")
        assert requests.get(base + "/internalStats", timeout=10).json()["compactedLedger"]["entries"] == 3
    finally:
        client.close()


def test_rest_status_before_any_compaction_and_conflict(client, broker, topic):
    produce(client, topic, [(f"k{i % 100}", b"x" * 1000) for i in range(3000)], batching=True)
    base = rest_base(broker, topic)
    assert requests.get(base + "/compaction", timeout=10).json() == {"status": "NOT_RUN", "lastError": ""}
    assert requests.put(base + "/compaction", timeout=10).status_code == 204
    second = requests.put(base + "/compaction", timeout=10)
    # 409 while the first still runs; if it already finished, a second run is fine too
    assert second.status_code in (204, 409)
    wait_for(lambda: requests.get(base + "/compaction", timeout=10).json()["status"] == "SUCCESS")
    topic_stats = requests.get(base + "/stats", timeout=10).json()["compaction"]
    assert topic_stats["lastCompactionRemovedEventCount"] == 2900
    assert topic_stats["lastCompactionSucceedTimestamp"] > 0


def test_seek_on_read_compacted_reader(client, broker, topic):
    receipts = produce(client, topic, [(f"k{i}", f"v{i}".encode()) for i in range(10)], batching=False)
    compact(broker, topic)
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    first = reader.read_next(5000)
    ids = [reader.read_next(5000).message_id() for _ in range(4)]
    reader.seek(ids[1])  # the official client's seek delivers from the sought message on
    again = reader.read_next(5000)
    assert again.partition_key() == "k3" and first.partition_key() == "k0"
    assert str(again.message_id()) == receipts["k3"][1]
    reader.close()

