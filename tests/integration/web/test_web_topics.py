"""Topics through the admin API, checked with the official client on the same broker: create,
list, delete (412 while clients are connected), partitions, stats, internal stats, messages by
position, the last message id, unload."""
import asyncio

import pulsar

from minipulsar.broker.topic_name import TopicName
from tests.helpers import Admin, rest_path, wait_for


def base(topic: str) -> str:
    return "/admin/v2" + rest_path(topic)


def test_create_list_and_delete(admin, official, topic):
    assert admin.put(base(topic)).status_code == 204
    assert admin.put(base(topic)).status_code == 409
    assert topic in admin.get("/admin/v2/persistent/public/default").json()
    producer = official.create_producer(topic)
    producer.send(b"kept until delete")
    busy = admin.delete(base(topic))
    assert busy.status_code == 412 and "active" in busy.json()["reason"]
    assert admin.delete(base(topic), params={"force": "true"}).status_code == 204
    assert topic not in admin.get("/admin/v2/persistent/public/default").json()
    assert admin.delete(base(topic)).status_code == 404
    assert admin.get(base(topic) + "/stats").status_code == 404


def test_create_without_auto_creation(broker_factory, official):
    broker = broker_factory(allowAutoTopicCreation="false")
    admin = Admin(broker.broker.web_service_url)
    topic = "persistent://public/default/explicit"
    assert admin.put(base(topic)).status_code == 204
    client = pulsar.Client(broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.create_producer(topic).send(b"x")
    finally:
        client.close()
    assert admin.get(base(topic) + "/stats").json()["numberOfEntries"] == 1


def test_partitions_create_grow_and_delete(admin, official, topic):
    assert admin.put(base(topic) + "/partitions", json=2).status_code == 204
    assert admin.put(base(topic) + "/partitions", json=2).status_code == 409
    assert admin.put(base(topic + "-zero") + "/partitions", json=0).status_code == 409
    assert admin.get(base(topic) + "/partitions").json() == {"partitions": 2}
    assert official.get_topic_partitions(topic) == [f"{topic}-partition-0", f"{topic}-partition-1"]
    assert admin.post(base(topic) + "/partitions", json=1).status_code == 409  # only grows
    assert admin.post(base(topic) + "/partitions", json=4).status_code == 204
    assert len(official.get_topic_partitions(topic)) == 4
    assert topic in admin.get("/admin/v2/persistent/public/default/partitioned").json()
    producer = official.create_producer(topic)
    for i in range(8):
        producer.send(b"x", partition_key=str(i))
    assert admin.delete(base(topic) + "/partitions").status_code == 412  # the producer is connected
    producer.close()
    assert admin.delete(base(topic) + "/partitions").status_code == 204
    assert admin.get(base(topic) + "/partitions").json() == {"partitions": 0}
    assert not [t for t in admin.get("/admin/v2/persistent/public/default").json() if t.startswith(topic)]


def test_stats_internal_stats_and_last_message_id(admin, official, topic):
    consumer = official.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(str(i).encode()) for i in range(6)]
    for message in [consumer.receive(5000) for _ in range(6)]:
        if int(message.data()) in (0, 1, 3):
            consumer.acknowledge(message)
    stats = admin.get(base(topic) + "/stats").json()
    assert stats["numberOfEntries"] == 6 and stats["publishers"][0]["msgInCounter"] == 6
    wait_for(lambda: admin.get(base(topic) + "/internalStats").json()["cursors"]["sub"]["markDeletePosition"]
             == f"{ids[1].ledger_id()}:{ids[1].entry_id()}", "the acks to reach the cursor")
    internal = admin.get(base(topic) + "/internalStats").json()
    ledger = ids[0].ledger_id()
    assert internal["numberOfEntries"] == 6 and internal["entriesAddedCounter"] == 6
    assert internal["lastConfirmedEntry"] == f"{ledger}:{ids[5].entry_id()}"
    assert internal["ledgers"][-1]["ledgerId"] == ledger and internal["ledgers"][-1]["entries"] == 6
    cursor = internal["cursors"]["sub"]
    assert cursor["individuallyDeletedMessages"] == f"[({ledger}:{ids[2].entry_id()}..{ledger}:{ids[3].entry_id()}]]"
    assert cursor["totalNonContiguousDeletedMessagesRange"] == 1
    assert cursor["active"] is True  # a consumer reads it: the ledger caches new entries
    last = admin.get(base(topic) + "/lastMessageId").json()
    assert (last["ledgerId"], last["entryId"], last["partitionIndex"]) == (ledger, ids[5].entry_id(), -1)
    consumer.close()
    wait_for(lambda: admin.get(base(topic) + "/internalStats").json()["cursors"]["sub"]["active"] is False,
             "the cursor to go inactive with its last consumer")


def test_message_by_position_and_examine(admin, official, topic):
    producer = official.create_producer(topic, batching_enabled=False, compression_type=pulsar.CompressionType.LZ4)
    ids = [producer.send(f"message-{i}".encode() * 20, properties={"k": str(i)}, partition_key="pk") for i in range(3)]
    answer = admin.get(base(topic) + f"/ledger/{ids[1].ledger_id()}/entry/{ids[1].entry_id()}")
    assert answer.status_code == 200 and answer.content == b"message-1" * 20
    assert answer.headers["X-Pulsar-Message-ID"] == f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    assert answer.headers["X-Pulsar-PROPERTY-k"] == "1" and answer.headers["X-Pulsar-partition-key"] == "pk"
    assert answer.headers["X-Pulsar-publish-time"].endswith("Z")
    first = admin.get(base(topic) + "/examinemessage", params={"initialPosition": "earliest", "messagePosition": 1})
    assert first.content == b"message-0" * 20
    last = admin.get(base(topic) + "/examinemessage", params={"initialPosition": "latest", "messagePosition": 1})
    assert last.content == b"message-2" * 20
    assert admin.get(base(topic) + "/examinemessage", params={"messagePosition": 4}).status_code == 404
    assert admin.get(base(topic) + "/ledger/999/entry/0").status_code == 404
    assert admin.get(base(topic) + "/ledger/x/entry/0").status_code == 400


def test_unload_makes_clients_reconnect(admin, broker, official, topic):
    consumer = official.subscribe(topic, "sub")
    producer = official.create_producer(topic)
    producer.send(b"before")
    consumer.acknowledge(consumer.receive(5000))
    wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0, "the ack to reach the broker")
    assert admin.put(base(topic) + "/unload").status_code == 204
    assert str(topic) not in broker.run(lambda: set(broker.broker.topics))
    producer.send(b"after")  # the client reconnects and the topic loads again
    assert consumer.receive(10000).data() == b"after"
    assert admin.put(base("persistent://public/default/never-created") + "/unload").status_code == 404


def test_a_request_during_an_unload_loads_the_topic_after_it_closed(admin, broker, official, topic):
    """A stats request arriving while an unload closes the topic (the web console polls every 2 s)
    waits for the close and loads the topic afresh; it once reopened the ledger being closed, and
    the topic loaded again took no more messages."""
    producer = official.create_producer(topic, send_timeout_millis=5000, batching_enabled=False)
    producer.send(b"before")
    name = TopicName.parse(topic)

    async def unload_while_asked():
        return await asyncio.gather(broker.broker.topic_admin.unload(name), broker.broker.get_topic(name, create=False))

    _, reloaded = broker.call(unload_while_asked())
    assert broker.run(lambda: broker.broker.topics[topic]) is reloaded
    producer.send(b"after")  # timed out (ResultTimeout) on a topic holding the closed ledger
    assert admin.get(base(topic) + "/stats").json()["msgInCounter"] == 1
