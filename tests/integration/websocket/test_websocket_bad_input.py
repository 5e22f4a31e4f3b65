"""Bad input to the WebSocket API gets Pulsar's error reply, close code or HTTP status, for that
session only: other sessions carry on and nothing acknowledged is lost."""
from __future__ import annotations

import base64
import json

import pulsar
import pytest
import requests
import websocket

from tests.helpers import drain, wait_for
from tests.integration.websocket.wsclient import b64, refused, ws_session, ws_url

TOPIC_PATH = "persistent/public/default/bad-input"
TOPIC = "persistent://public/default/bad-input"


def test_producer_answers_bad_frames_and_goes_on(broker, official):
    consumer = official.subscribe(TOPIC, "sub")
    with ws_session(broker, f"producer/{TOPIC_PATH}") as ws:
        ws.send_text("{not json")
        answer = ws.recv_json()
        assert answer["result"] == "send-error:3" and "context" not in answer and answer["errorMsg"]
        ws.send_text("[1, 2]")
        assert ws.recv_json()["result"] == "send-error:3"
        ws.send_json({"payload": b64(b"x"), "properties": {"nested": {"no": 1}}, "context": "c"})
        assert ws.recv_json()["result"] == "send-error:3"
        ws.send_json({"context": "no-payload"})
        assert ws.recv_json() == {"result": "send-error:7", "errorMsg": "payload is missing", "context": "no-payload"}
        ws.send_json({"payload": "not base64!", "context": "b64"})
        answer = ws.recv_json()
        assert (answer["result"], answer["context"]) == ("send-error:7", "b64")
        assert answer["errorMsg"].startswith("Invalid Base64 message-payload")
        ws.send_json({"payload": b64(b"x"), "eventTime": "yesterday", "context": "time"})
        assert ws.recv_json()["result"] == "send-error:7"
        ws.send_json({"payload": b64(b"fine"), "context": "ok", "unknownField": [1]})
        assert ws.recv_json()["result"] == "ok"
    assert [m.data() for m in drain(consumer)] == [b"fine"]  # nothing else was stored


def test_a_full_producer_queue_refuses_instead_of_blocking(broker, official):
    consumer = official.subscribe(TOPIC, "sub")
    with ws_session(broker, f"producer/{TOPIC_PATH}?maxPendingMessages=1") as ws:
        for i in range(30):
            ws.send_json({"payload": b64(f"m{i}".encode()), "context": str(i)})
        answers = [ws.recv_json() for _ in range(30)]
    refused_ = [a for a in answers if a["result"] == "send-error:8"]
    stored = [a for a in answers if a["result"] == "ok"]
    assert refused_ and stored and len(refused_) + len(stored) == 30
    assert all(a["errorMsg"] for a in refused_)
    assert sorted(m.data() for m in drain(consumer)) == sorted(f"m{a['context']}".encode() for a in stored)


def test_consumer_closes_on_bad_commands_without_losing_acks(broker, official):
    producer = official.create_producer(TOPIC)
    with ws_session(broker, f"consumer/{TOPIC_PATH}/sub?subscriptionType=Shared") as ws, \
            ws_session(broker, f"consumer/{TOPIC_PATH}/other") as bystander:
        for i in range(3):
            producer.send(f"m{i}".encode())
        messages = [ws.recv_json() for _ in range(3)]
        ws.send_json({"messageId": messages[0]["messageId"]})
        ws.send_json({"type": "whatever", "messageId": messages[1]["messageId"]})  # any other type acks, as Pulsar
        ws.send_text("garbage")
        code, reason = ws.close_frame()
        assert code == 4003 and reason.startswith("Failed to de-serialize from JSON")
        # the other session is untouched
        assert [base64.b64decode(bystander.recv_json()["payload"]) for _ in range(3)] == [b"m0", b"m1", b"m2"]
    consumer = official.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared)
    assert [m.data() for m in drain(consumer, timeout_ms=1000)] == [b"m2"]  # the two acknowledged stay acknowledged


@pytest.mark.parametrize("command", [
    {"messageId": "!!!"},                               # not base64
    {"messageId": b64(b"\xff\xff\xff")},               # not a MessageIdData
    {"type": "negativeAcknowledge"},                    # no messageId
    {"type": "permit"},                                 # no permitMessages
    ["an", "array"],
])
def test_consumer_refuses_unreadable_commands(broker, command):
    with ws_session(broker, f"consumer/{TOPIC_PATH}/sub") as ws:
        ws.send_json(command)
        code, reason = ws.close_frame()
    assert code == 4003 and reason.startswith("Failed to de-serialize from JSON")


def test_reader_closes_on_garbage(broker):
    with ws_session(broker, f"reader/{TOPIC_PATH}") as ws:
        ws.send_text("}{")
        assert ws.close_frame()[0] == 4003


def test_a_frame_over_the_limit_closes_that_session_only(broker_factory, official):
    broker = broker_factory(webSocketMaxTextFrameSize="2000")
    with ws_session(broker, f"producer/{TOPIC_PATH}") as big, ws_session(broker, f"producer/{TOPIC_PATH}") as small:
        big.send_json({"payload": b64(b"x" * 3000)})
        assert big.close_frame()[0] == 1009  # message too big
        small.send_json({"payload": b64(b"x" * 1000)})
        assert small.recv_json()["result"] == "ok"


@pytest.mark.parametrize("path, status, reason", [
    (f"/ws/v2/consumer/{TOPIC_PATH}", 400, "Invalid query params: Invalid topic name format"),
    (f"/ws/v2/consumer/{TOPIC_PATH}/", 400, "Invalid query params: Empty subscription name"),
    ("/ws/v2/producer/elsewhere/public/default/t", 400, "Invalid query params: Invalid topic name format"),
    (f"/ws/v2/consumer/{TOPIC_PATH}/s?receiverQueueSize=ten", 400, 'Invalid query params: For input string: "ten"'),
    (f"/ws/v2/consumer/{TOPIC_PATH}/s?subscriptionType=Fanout", 400, "Invalid query params: Invalid subscriptionType Fanout"),
    (f"/ws/v2/consumer/{TOPIC_PATH}/s?ackTimeoutMillis=10", 400,
     "Invalid query params: Ack timeout should be greater than 1000 ms"),
    (f"/ws/v2/consumer/{TOPIC_PATH}/s?deadLetterTopic=dlq", 400, "Invalid query params: MaxRedeliverCount must be > 0."),
    (f"/ws/v2/producer/{TOPIC_PATH}?compressionType=GZIP", 400, "Invalid query params: Invalid compressionType GZIP"),
    (f"/ws/v2/producer/{TOPIC_PATH}?hashingScheme=Boost", 400,
     "Invalid query params: No enum constant org.apache.pulsar.client.api.HashingScheme.Boost"),
    (f"/ws/v2/reader/{TOPIC_PATH}?messageId=@@", 400, None),
    ("/ws/producer/persistent/public/standalone/default/t", 404, None),  # v1: no cluster-scoped namespaces
    ("/ws/consumer/persistent/public/standalone/default/t/s", 404, None),
    ("/ws/reader/persistent/public/standalone/default/t", 500, None),  # a reader's failures are all 500
    ("/ws/v2/producer/persistent/no-such-tenant/ns/t", 404, None),
    ("/ws/v2/reader/persistent/no-such-tenant/ns/t", 500, None),
])
def test_refused_upgrades(broker, path, status, reason):
    got_status, got_reason = refused(ws_url(broker, path))
    assert got_status == status
    assert got_reason == reason if reason is not None else got_reason


def test_busy_and_terminated_topics_are_refused_with_pulsar_codes(broker, official, admin):
    with ws_session(broker, f"consumer/{TOPIC_PATH}/exclusive"):
        status, reason = refused(ws_url(broker, f"consumer/{TOPIC_PATH}/exclusive"))
        assert status == 409 and reason.startswith("Failed to create consumer:")
    with ws_session(broker, f"producer/{TOPIC_PATH}?producerName=only-one"):
        assert refused(ws_url(broker, f"producer/{TOPIC_PATH}?producerName=only-one"))[0] == 409
    assert admin.post("/admin/v2/persistent/public/default/bad-input/terminate").status_code == 200
    status, reason = refused(ws_url(broker, f"producer/{TOPIC_PATH}"))
    assert status == 503 and reason.startswith("Failed to create producer:")


def test_plain_get_and_disabled_service(broker_factory):
    broker = broker_factory()
    answer = requests.get(broker.broker.web_service_url + f"/ws/v2/producer/{TOPIC_PATH}", timeout=10)
    # Jetty's WebSocket servlet hands a request without an upgrade to HttpServlet.doGet
    assert (answer.status_code, answer.json()["reason"]) == (405, "HTTP method GET is not supported by this URL")
    off = broker_factory(webSocketServiceEnabled="false")
    assert refused(ws_url(off, f"producer/{TOPIC_PATH}"))[0] == 404


def test_a_broker_with_the_client_sizing_settings_serves_sessions(broker_factory):
    """webSocketNumIoThreads and webSocketConnectionsPerBroker size the service's PulsarClient in
    Pulsar (WebSocketService.createClientInstance); here they are read and change nothing."""
    broker = broker_factory(webSocketNumIoThreads="2", webSocketConnectionsPerBroker="3")
    config = broker.broker.config
    assert (config.web_socket_num_io_threads, config.web_socket_connections_per_broker) == (2, 3)
    with ws_session(broker, f"producer/{TOPIC_PATH}") as ws:
        ws.send_json({"payload": b64(b"x")})
        assert ws.recv_json()["result"] == "ok"


def test_idle_sessions_close_and_pings(broker_factory):
    broker = broker_factory(webSocketSessionIdleTimeoutMillis="300")
    with ws_session(broker, f"consumer/{TOPIC_PATH}/idle") as ws:
        assert ws.close_frame() == (1001, "Connection Idle Timeout")
    pinging = broker_factory(webSocketPingDurationSeconds="1")
    with ws_session(pinging, f"reader/{TOPIC_PATH}") as ws:
        ws.socket.settimeout(10)
        opcode, data = ws.socket.recv_data(control_frame=True)
        assert (opcode, data) == (websocket.ABNF.OPCODE_PING, b"PING")


def test_pingpong_answers_pings(broker):
    socket = websocket.create_connection(ws_url(broker, "pingpong"), timeout=10)
    socket.ping(b"hello")
    opcode, data = socket.recv_data(control_frame=True)
    assert (opcode, data) == (websocket.ABNF.OPCODE_PONG, b"hello")
    socket.close()
    v1 = websocket.create_connection(ws_url(broker, "/ws/pingpong"), timeout=10)
    v1.ping(b"v1")
    assert v1.recv_data(control_frame=True) == (websocket.ABNF.OPCODE_PONG, b"v1")
    v1.close()


def test_nothing_is_lost_when_a_consumer_session_breaks(broker, official):
    """A client that vanishes without closing: what it did not acknowledge goes to the next consumer."""
    producer = official.create_producer(TOPIC)
    socket = websocket.create_connection(ws_url(broker, f"consumer/{TOPIC_PATH}/sub"), timeout=10)
    producer.send(b"in flight")
    assert json.loads(socket.recv())["payload"] == b64(b"in flight")
    socket.sock.close()  # no close frame
    wait_for(lambda: not broker.subscription_stats(TOPIC, "sub")["consumers"], "the broken session's consumer gone")
    consumer = official.subscribe(TOPIC, "sub")
    assert consumer.receive(10000).data() == b"in flight"
