"""A WebSocket consumer's redeliveries (negative acks, ack timeout, dead letters) and flow control
(push mode's receiverQueueSize bound, pull mode's permits)."""
from __future__ import annotations

import base64

from tests.helpers import wait_for
from tests.integration.websocket.wsclient import ws_session


def _consumer(topic: str, subscription: str, query: str = "") -> str:
    return f"consumer/{topic.replace('://', '/')}/{subscription}{query}"


def test_negative_ack_redelivers_with_a_count(broker, official, topic):
    query = "?subscriptionType=Shared&negativeAckRedeliveryDelay=100"
    with ws_session(broker, _consumer(topic, "sub", query)) as ws:
        official.create_producer(topic).send(b"retry me")
        first = ws.recv_json()
        assert first["redeliveryCount"] == 0
        ws.send_json({"type": "negativeAcknowledge", "messageId": first["messageId"]})
        second = ws.recv_json()
        assert (second["messageId"], second["redeliveryCount"]) == (first["messageId"], 1)
        ws.send_json({"type": "negativeAcknowledge", "messageId": second["messageId"]})
        third = ws.recv_json()
        assert third["redeliveryCount"] == 2
        ws.send_json({"messageId": third["messageId"]})
        assert ws.nothing_within(0.5)


def test_ack_timeout_redelivers(broker, official, topic):
    with ws_session(broker, _consumer(topic, "sub", "?subscriptionType=Shared&ackTimeoutMillis=1000")) as ws:
        official.create_producer(topic).send(b"forgotten")
        first = ws.recv_json()
        again = ws.recv_json(timeout=10)  # never acknowledged: back after about a second
        assert (again["messageId"], again["redeliveryCount"]) == (first["messageId"], 1)


def test_dead_letter_topic_after_max_redeliveries(broker, official, topic):
    dead = f"{topic}-dlq"
    dead_consumer = official.subscribe(dead, "inspect")
    query = f"?subscriptionType=Shared&negativeAckRedeliveryDelay=50&maxRedeliverCount=2&deadLetterTopic={dead}"
    with ws_session(broker, _consumer(topic, "sub", query)) as ws:
        official.create_producer(topic).send(b"poison")
        counts = []
        for _ in range(3):  # delivered max_redeliver_count + 1 times
            message = ws.recv_json()
            counts.append(message["redeliveryCount"])
            ws.send_json({"type": "negativeAcknowledge", "messageId": message["messageId"]})
        assert counts == [0, 1, 2]
        dead_letter = dead_consumer.receive(10000)
        assert dead_letter.data() == b"poison"
        assert ws.nothing_within(0.5)


def test_default_dead_letter_topic_name(broker, official, topic):
    dead_consumer = official.subscribe(f"{topic}-sub-DLQ", "inspect")
    with ws_session(broker, _consumer(topic, "sub", "?subscriptionType=Shared&negativeAckRedeliveryDelay=50&maxRedeliverCount=1")) as ws:
        official.create_producer(topic).send(b"poison")
        for _ in range(2):
            ws.send_json({"type": "negativeAcknowledge", "messageId": ws.recv_json()["messageId"]})
        assert dead_consumer.receive(10000).data() == b"poison"


def test_push_mode_holds_at_receiver_queue_size(broker, official, topic):
    producer = official.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode())
    with ws_session(broker, _consumer(topic, "sub", "?receiverQueueSize=2&subscriptionInitialPosition=Earliest")) as ws:
        first, second = ws.recv_json(), ws.recv_json()
        assert ws.nothing_within(0.5)  # two unacknowledged on the socket: no third
        ws.send_json({"messageId": first["messageId"]})
        third = ws.recv_json()
        assert base64.b64decode(third["payload"]) == b"m2"
        assert ws.nothing_within(0.3)
        for message in (second, third):
            ws.send_json({"messageId": message["messageId"]})
        assert [base64.b64decode(ws.recv_json()["payload"]) for _ in range(2)] == [b"m3", b"m4"]


def test_receiver_queue_size_is_capped_at_1000(broker, official, topic):
    producer = official.create_producer(topic, batching_enabled=True, batching_max_messages=500)
    for i in range(1100):
        producer.send_async(b"x", None)
    producer.flush()
    with ws_session(broker, _consumer(topic, "sub", "?receiverQueueSize=5000&subscriptionInitialPosition=Earliest")) as ws:
        for _ in range(1000):
            ws.recv_json()
        assert ws.nothing_within(0.5)


def test_pull_mode_sends_what_permits_allow(broker, official, topic):
    producer = official.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode())
    with ws_session(broker, _consumer(topic, "sub", "?pullMode=true&subscriptionInitialPosition=Earliest")) as ws:
        assert ws.nothing_within(0.5)  # nothing before a permit
        ws.send_json({"type": "permit", "permitMessages": 2})
        got = [base64.b64decode(ws.recv_json()["payload"]) for _ in range(2)]
        assert got == [b"m0", b"m1"]
        assert ws.nothing_within(0.3)  # acknowledgements do not permit more in pull mode
        ws.send_json({"type": "permit", "permitMessages": 3})
        assert [base64.b64decode(ws.recv_json()["payload"]) for _ in range(3)] == [b"m2", b"m3", b"m4"]


def test_unsubscribe_deletes_the_subscription(broker, official, topic):
    official.create_producer(topic).send(b"x")
    with ws_session(broker, _consumer(topic, "gone", "?subscriptionInitialPosition=Earliest")) as ws:
        ws.recv_json()
        assert "gone" in broker.topic_stats(topic)["subscriptions"]
        ws.send_json({"type": "unsubscribe"})
        assert ws.close_frame() == (1000, "Unsubscribed")
    assert "gone" not in broker.topic_stats(topic)["subscriptions"]


def test_non_durable_subscription_goes_with_its_consumer(broker, official, topic):
    with ws_session(broker, _consumer(topic, "fleeting", "?subscriptionMode=NonDurable")) as ws:
        official.create_producer(topic).send(b"x")
        assert base64.b64decode(ws.recv_json()["payload"]) == b"x"
        assert broker.subscription_stats(topic, "fleeting")["isDurable"] is False
    wait_for(lambda: "fleeting" not in broker.topic_stats(topic)["subscriptions"], "the subscription gone with its session")


def test_key_failover_and_is_end_of_topic(broker, official, topic, admin):
    official.create_producer(topic).send(b"last")
    with ws_session(broker, _consumer(topic, "kf", "?subscriptionType=Key_Failover&subscriptionInitialPosition=Earliest")) as ws:
        message = ws.recv_json()
        ws.send_json({"type": "isEndOfTopic"})
        assert ws.recv_json() == {"endOfTopic": False}
        assert admin.post(f"/admin/v2/persistent/{topic.split('://')[1]}/terminate").status_code == 200
        ws.send_json({"messageId": message["messageId"]})

        def end_of_topic() -> bool:
            ws.send_json({"type": "isEndOfTopic"})
            return ws.recv_json()["endOfTopic"]

        wait_for(end_of_topic, "endOfTopic once the terminated topic is read")
        assert broker.subscription_stats(topic, "kf")["type"] == "Key_Failover"


def test_sessions_survive_a_topic_unload(broker, official, topic, admin):
    """The session's client reconnects by itself, as any client of an unloaded topic does."""
    producer = official.create_producer(topic)
    with ws_session(broker, _consumer(topic, "sub")) as ws:
        producer.send(b"before")
        ws.send_json({"messageId": ws.recv_json()["messageId"]})
        assert admin.put(f"/admin/v2/persistent/{topic.split('://')[1]}/unload").status_code == 204
        producer.send(b"after")
        assert base64.b64decode(ws.recv_json()["payload"]) == b"after"


def test_broker_shutdown_closes_sessions_with_1001(broker_factory):
    broker = broker_factory()
    with ws_session(broker, "consumer/persistent/public/default/shutdown/sub") as ws:
        broker.stop()
        assert ws.close_frame() == (1001, "Shutdown")
