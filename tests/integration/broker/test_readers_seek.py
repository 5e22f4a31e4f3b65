"""Readers, seek by message id and by publish time, get_last_message_id."""
import pulsar

from tests.helpers import drain, publish_time_cut, wait_for


def produce(client, topic, n):
    producer = client.create_producer(topic)
    ids = []
    for i in range(n):
        ids.append(producer.send(str(i).encode()))
    return producer, ids


def read_all(reader, timeout_ms=500):
    got = []
    while True:
        try:
            got.append(int(reader.read_next(timeout_ms).data()))
        except pulsar.Timeout:
            return got


def test_reader_from_earliest_and_latest(client, topic):
    producer, _ = produce(client, topic, 5)
    earliest = client.create_reader(topic, pulsar.MessageId.earliest)
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    producer.send(b"5")
    assert read_all(earliest) == [0, 1, 2, 3, 4, 5]
    assert read_all(latest) == [5]


def test_reader_from_a_message_id_exclusive_and_inclusive(client, topic):
    _, ids = produce(client, topic, 10)
    exclusive = client.create_reader(topic, ids[4])
    inclusive = client.create_reader(topic, ids[4], start_message_id_inclusive=True)
    assert read_all(exclusive) == [5, 6, 7, 8, 9]
    assert read_all(inclusive) == [4, 5, 6, 7, 8, 9]


def test_reader_has_message_available(client, topic):
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()
    produce(client, topic, 2)
    assert reader.has_message_available()
    assert read_all(reader) == [0, 1]
    assert not reader.has_message_available()


def test_readers_leave_no_subscription_behind(client, topic, broker):
    produce(client, topic, 1)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert read_all(reader) == [0]
    reader.close()
    wait_for(lambda: broker.run(lambda: not broker.broker.topics[topic].subscriptions),
             "the reader's non-durable subscription to go")
    assert broker.run(lambda: broker.broker.topics[topic].subscriptions) == {}


def test_seek_by_message_id(client, topic, broker):
    _, ids = produce(client, topic, 10)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert [int(m.data()) for m in drain(consumer)] == list(range(10))
    consumer.seek(ids[3])
    cursor = broker.run(lambda: broker.broker.topics[topic].subscriptions["sub"].cursor)
    # The broker resets the cursor to the sought entry itself (mark-delete just below it) ...
    assert broker.run(lambda: cursor.mark_delete_position) == (ids[2].ledger_id(), ids[2].entry_id())
    # ... and the C++ client, whose startMessageIdInclusive is off by default, drops that entry.
    assert [int(m.data()) for m in drain(consumer, 2000)] == list(range(4, 10))


def test_seek_to_earliest_on_a_subscription(broker, client, topic):
    produce(client, topic, 3)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    for m in drain(consumer):
        consumer.acknowledge(m)
    wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0, "the acks to reach the broker")
    consumer.seek(pulsar.MessageId.earliest)
    assert [int(m.data()) for m in drain(consumer, 2000)] == [0, 1, 2]


def test_seek_by_publish_time(client, topic):
    producer, ids = produce(client, topic, 3)
    middle = publish_time_cut()
    for i in range(3, 6):
        producer.send(str(i).encode())
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert len(drain(consumer)) == 6
    consumer.seek(middle)
    assert [int(m.data()) for m in drain(consumer, 2000)] == [3, 4, 5]


def test_get_last_message_id(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer, ids = produce(client, topic, 4)
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())


def test_get_last_message_id_points_at_the_last_batch_index(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                      batching_max_publish_delay_ms=1000)
    for i in range(5):
        producer.send_async(str(i).encode(), None)
    producer.flush()
    last = consumer.get_last_message_id()
    assert last.batch_index() == 4


def test_reader_seek_by_time_and_by_id(client, topic, broker):
    producer, ids = produce(client, topic, 3)
    middle = publish_time_cut()
    for i in range(3, 6):
        producer.send(str(i).encode())
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert read_all(reader) == [0, 1, 2, 3, 4, 5]
    reader.seek(middle)
    assert read_all(reader, 2000) == [3, 4, 5]
    reader.seek(ids[1])
    assert read_all(reader, 2000) == [2, 3, 4, 5]
    reader.close()


def test_seek_by_publish_time_delivers_the_messages_of_that_millisecond(client, topic):
    """Pulsar resets to the first entry published at or after the timestamp: when several messages
    share the sought millisecond, the first of them is the first delivered."""
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(300):  # sent without waiting: many share a millisecond
        producer.send_async(str(i).encode(), None)
    producer.flush()
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    received = drain(consumer, 1000, ack=True)
    assert len(received) == 300
    times = [m.publish_timestamp() for m in received]
    index = next(i for i in range(1, len(times)) if times[i] == times[i - 1] and times[i - 1] != times[0])
    shared_ms = times[index]
    first_of_ms = times.index(shared_ms)
    consumer.seek(shared_ms)
    assert int(consumer.receive(5000).data()) == first_of_ms


def test_reader_on_a_fully_trimmed_topic_is_promised_nothing(broker_factory, tmp_path, topic):
    """Retention trimmed the topic's only ledger at restart: GET_LAST_MESSAGE_ID names the current
    ledger with entry -1, so has_message_available() says no instead of promising a message that
    read_next could never return (the hang Apache Pulsar can show, apache/pulsar#8725)."""
    first = broker_factory(data_dir=tmp_path / "d")
    client = pulsar.Client(first.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for _ in range(3):
        producer.send(b"x")
    for _ in range(3):
        consumer.acknowledge(consumer.receive(5000))
    wait_for(lambda: first.subscription_stats(topic, "sub")["msgBacklog"] == 0, "the acks to reach the broker")
    client.close()
    first.stop()
    second = broker_factory(data_dir=tmp_path / "d")
    client = pulsar.Client(second.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        assert second.topic_stats(topic)["numberOfEntries"] == 0
        assert not reader.has_message_available()
        client.create_producer(topic).send(b"new")
        assert reader.has_message_available() and reader.read_next(5000).data() == b"new"
    finally:
        client.close()
