"""Subscriptions through the admin API, with the official client consuming what the API changed:
create at a message id, list, delete, reset by time and by id, skip, skip all, expire, and the
PIP-33 replicated flag."""
import pulsar

from tests.helpers import drain, publish_time_cut, rest_path, wait_for


def sub(topic: str, name: str = "sub") -> str:
    return "/admin/v2" + rest_path(topic) + f"/subscription/{name}"


def produce(official, topic: str, count: int, start: int = 0) -> list:
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(str(i).encode()) for i in range(start, start + count)]
    producer.close()
    return ids


def values(consumer) -> list[int]:
    return [int(m.data()) for m in drain(consumer, 1000, ack=True)]


def test_create_at_message_id_list_and_delete(admin, official, topic):
    ids = produce(official, topic, 5)
    body = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
    assert admin.put(sub(topic), json=body).status_code == 204
    assert admin.put(sub(topic), json=body).status_code == 409
    assert admin.put(sub(topic, "latest")).status_code == 204
    assert admin.get("/admin/v2" + rest_path(topic) + "/subscriptions").json() == ["latest", "sub"]
    consumer = official.subscribe(topic, "sub")
    assert values(consumer) == [2, 3, 4]
    assert admin.delete(sub(topic)).status_code == 412  # a consumer is connected
    assert admin.delete(sub(topic), params={"force": "true"}).status_code == 204
    assert admin.delete(sub(topic, "latest")).status_code == 204
    assert admin.get("/admin/v2" + rest_path(topic) + "/subscriptions").json() == []
    assert admin.delete(sub(topic, "gone")).status_code == 404


def test_reset_cursor_by_time_and_by_id(admin, official, topic):
    consumer = official.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    produce(official, topic, 3)
    cut = publish_time_cut()
    ids = produce(official, topic, 3, start=3)
    assert values(consumer) == [0, 1, 2, 3, 4, 5]
    assert admin.post(sub(topic) + f"/resetcursor/{cut}").status_code == 204
    assert values(consumer) == [3, 4, 5]  # the consumer was disconnected and resumed at the reset cursor
    body = {"ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}
    assert admin.post(sub(topic) + "/resetcursor", json=body).status_code == 204
    assert values(consumer) == [4, 5]
    assert admin.post(sub(topic) + "/resetcursor", json={"ledgerId": "x"}).status_code == 400


def test_skip_skip_all_and_backlog(admin, broker, official, topic):
    assert admin.put(sub(topic), json={"ledgerId": -1, "entryId": -1}).status_code == 204  # earliest
    produce(official, topic, 10)
    assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 10
    assert admin.post(sub(topic) + "/skip/3").status_code == 204
    assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 7
    consumer = official.subscribe(topic, "sub")
    assert values(consumer)[0] == 3
    produce(official, topic, 4, start=10)
    consumer.close()
    assert admin.post(sub(topic) + "/skip_all").status_code == 204
    assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 0
    assert admin.post(sub(topic) + "/skip/-1").status_code == 400


def test_expire_messages_older_than_a_cut(admin, broker, official, topic):
    assert admin.put(sub(topic), json={"ledgerId": -1, "entryId": -1}).status_code == 204
    produce(official, topic, 4)
    assert admin.post(sub(topic) + "/expireMessages/3600").status_code == 204  # nothing is that old
    assert broker.subscription_stats(topic, "sub")["msgBacklog"] == 4
    publish_time_cut()
    assert admin.post(sub(topic) + "/expireMessages/0").status_code == 204
    wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0, "every message to expire")


def test_replicated_subscription_status(admin, official, topic):
    official.subscribe(topic, "sub").close()
    path = sub(topic) + "/replicatedSubscriptionStatus"
    assert admin.get(path).json() == {topic: False}
    assert admin.post(path, json=True).status_code == 204
    assert admin.get(path).json() == {topic: True}
    assert admin.post(path, json="yes").status_code == 400
