"""Subscription types shared by several WebSocket consumer sessions, and the consumer parameters
that decide among them (consumerName, priorityLevel). Pulsar's SubscriptionType docs: Failover
has one active consumer, chosen by priority level then consumer name, and what it left
unacknowledged goes to the next one; Key_Shared sends all messages of a key to one consumer."""
from __future__ import annotations

import base64
from collections import defaultdict

from tests.helpers import wait_for
from tests.integration.websocket.wsclient import ws_session


def _consumer(topic: str, subscription: str, query: str) -> str:
    return f"consumer/{topic.replace('://', '/')}/{subscription}?{query}"


def _payload(message: dict) -> bytes:
    return base64.b64decode(message["payload"])


def _consumer_stats(broker, topic: str, subscription: str) -> dict[str, dict]:
    """The subscription's consumers' stats by consumerName."""
    return {c["consumerName"]: c for c in broker.subscription_stats(topic, subscription)["consumers"]}


def test_consumer_name_and_priority_level_reach_the_broker(broker, topic):
    query = "subscriptionType=Shared&consumerName=ws-named&priorityLevel=3"
    with ws_session(broker, _consumer(topic, "sub", query)):
        consumers = _consumer_stats(broker, topic, "sub")
    assert list(consumers) == ["ws-named"]
    assert consumers["ws-named"]["priorityLevel"] == 3


def test_failover_one_active_consumer_then_the_other_takes_over(broker, official, topic):
    failover = "subscriptionType=Failover&consumerName="
    with ws_session(broker, _consumer(topic, "fo", failover + "a")) as a, \
            ws_session(broker, _consumer(topic, "fo", failover + "b")) as b:
        assert broker.subscription_stats(topic, "fo")["activeConsumerName"] == "a"  # same priority: by name
        producer = official.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode())
        received = [a.recv_json() for _ in range(3)]
        assert [_payload(m) for m in received] == [b"m0", b"m1", b"m2"]
        assert _consumer_stats(broker, topic, "fo")["b"]["msgOutCounter"] == 0  # the standby got nothing
        a.send_json({"messageId": received[0]["messageId"]})
        wait_for(lambda: broker.subscription_stats(topic, "fo")["msgBacklog"] == 2, "m0 acknowledged")
        a.close()
        wait_for(lambda: broker.subscription_stats(topic, "fo")["activeConsumerName"] == "b", "b active")
        producer.send(b"m3")
        # what a left unacknowledged, then the new message; m0 stays acknowledged
        assert [_payload(b.recv_json()) for _ in range(3)] == [b"m1", b"m2", b"m3"]


def test_failover_prefers_the_lower_priority_level(broker, official, topic):
    """priorityLevel 0 is the highest priority: b is active although a comes first by name."""
    failover = "subscriptionType=Failover&consumerName="
    with ws_session(broker, _consumer(topic, "fo", failover + "a&priorityLevel=1")) as a, \
            ws_session(broker, _consumer(topic, "fo", failover + "b&priorityLevel=0")) as b:
        assert broker.subscription_stats(topic, "fo")["activeConsumerName"] == "b"
        official.create_producer(topic).send(b"to b")
        assert _payload(b.recv_json()) == b"to b"
        assert _consumer_stats(broker, topic, "fo")["a"]["msgOutCounter"] == 0
        assert a.socket.connected


def test_key_shared_sends_each_key_to_one_consumer(broker, official, topic):
    key_shared = "subscriptionType=Key_Shared&consumerName="
    with ws_session(broker, _consumer(topic, "ks", key_shared + "a")) as a, \
            ws_session(broker, _consumer(topic, "ks", key_shared + "b")) as b:
        producer = official.create_producer(topic, batching_enabled=False)
        keys = [f"key-{k}" for k in range(8)]
        for key in keys:  # a key's messages one after the other: an alternating dispatch would split them
            for i in range(3):
                producer.send(f"{key}/{i}".encode(), partition_key=key)
        total = len(keys) * 3
        wait_for(lambda: sum(c["msgOutCounter"] for c in _consumer_stats(broker, topic, "ks").values()) == total,
                 "every message dispatched")
        counts = {name: c["msgOutCounter"] for name, c in _consumer_stats(broker, topic, "ks").items()}
        assert counts["a"] and counts["b"], counts  # both consumers got a share of the keys
        owner: dict[str, set[str]] = defaultdict(set)
        for name, session in (("a", a), ("b", b)):
            for _ in range(counts[name]):
                message = session.recv_json()
                owner[message["key"]].add(name)
                assert _payload(message).decode().startswith(message["key"] + "/")
    assert set(owner) == set(keys)
    assert all(len(names) == 1 for names in owner.values()), dict(owner)
