"""The WebSocket API's JSON shapes, times, base64 and message ids (broker/web/websocket/formats.py)."""
from __future__ import annotations

import time

import pytest

from minipulsar.broker.web.websocket.formats import (WebSocketError, consumer_message, decode_base64,
                                                     decode_message_id, encode_message_id, format_time, parse_time,
                                                     producer_error, producer_ok)
from minipulsar.client import Message, MessageId


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def los_angeles(monkeypatch):
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_times_are_written_as_java_iso_offset_date_time(utc):
    assert format_time(1635548498967) == "2021-10-29T23:01:38.967Z"
    assert format_time(1635548498900) == "2021-10-29T23:01:38.9Z"  # no trailing zeros
    assert format_time(1635548498000) == "2021-10-29T23:01:38Z"  # no fraction at all


def test_times_carry_the_machines_offset(los_angeles):
    assert format_time(1635548498967) == "2021-10-29T16:01:38.967-07:00"


def test_times_parse_with_their_offset():
    assert parse_time("2021-10-29T16:01:38.967-07:00") == 1635548498967
    assert parse_time("2021-10-29T23:01:38.967Z") == 1635548498967
    assert parse_time(format_time(1700000000001)) == 1700000000001
    for bad in ("2021-10-29T23:01:38", "yesterday", 12):
        with pytest.raises(ValueError, match="could not be parsed"):
            parse_time(bad)


def test_base64_as_java_reads_it():
    assert decode_base64("aGk=") == decode_base64("aGk") == b"hi"
    for bad in ("a", "aGk =", "aG!k", "aGk==="):
        with pytest.raises(ValueError):
            decode_base64(bad)


def test_message_ids_round_trip():
    message_id = MessageId(2, 10, 7, 3, 5)
    assert decode_message_id(encode_message_id(message_id)) == message_id
    assert encode_message_id(MessageId(-1, 0, 3)) == "CAAQAw=="  # Pulsar's documented example
    for bad in (None, 5, "", "CAE=", "!!", "////"):  # CAE=: a ledger id and no entry id
        with pytest.raises(ValueError):
            decode_message_id(bad)


def test_producer_acks():
    assert producer_ok(MessageId(-1, 0, 3), "1") == {"result": "ok", "messageId": "CAAQAw==", "context": "1"}
    assert producer_ok(MessageId(-1, 0, 3), None) == {"result": "ok", "messageId": "CAAQAw=="}
    assert producer_error(WebSocketError.FailedToDeserializeFromJSON, "bad", None) == {
        "result": "send-error:3", "errorMsg": "bad"}


def test_consumer_message_fields(utc):
    message = Message(b"\x01\x02", MessageId(-1, 3, 0, 0, 2), "persistent://public/default/t", {"a": "b"},
                      partition_key="k", publish_time=1635548498967, event_time=1635548498000, redelivery_count=4)
    assert consumer_message(message) == {
        "messageId": "CAMQACAAMAI=", "payload": "AQI=", "properties": {"a": "b"},
        "publishTime": "2021-10-29T23:01:38.967Z", "redeliveryCount": 4, "eventTime": "2021-10-29T23:01:38Z",
        "key": "k"}
    bare = consumer_message(Message(b"", MessageId(-1, 1, 1), "t", publish_time=1))
    assert list(bare) == ["messageId", "payload", "properties", "publishTime", "redeliveryCount"]


def test_error_codes_travel_in_the_private_close_range():
    assert [(e.close_code, e.description()) for e in (WebSocketError.FailedToDeserializeFromJSON,
                                                      WebSocketError.UnknownError)] == [
        (4003, "Failed to de-serialize from JSON"), (4008, "Unknown error")]
