"""The JSON the WebSocket API exchanges, in Pulsar's shapes and field order.

- ProducerAck: {"result": "ok", "messageId", "context"} or {"result": "send-error:N", "errorMsg",
  "context"}; absent fields are left out (Jackson's NON_NULL).
- ConsumerMessage: {"messageId", "payload", "properties", "publishTime", "redeliveryCount",
  "eventTime", "key"}; eventTime only when set, key only when the message has one.
- EndOfTopicResponse: {"endOfTopic": true|false}.
- Message ids travel as base64 of the serialized MessageIdData (what the official clients'
  MessageId.serialize() gives and MessageId.deserialize() reads); payloads as base64.
- Times are ISO-8601 with the zone offset of the broker's machine, as Java's
  DateTimeFormatter.ISO_OFFSET_DATE_TIME writes them ("2021-10-29T16:01:38.967-07:00", "Z" for UTC,
  the fraction of a second without trailing zeros).
The error codes are Pulsar's WebSocketError values. Source: Pulsar's websocket data classes
(ProducerMessage, ProducerAck, ConsumerMessage, ConsumerCommand, EndOfTopicResponse),
WebSocketError and DateFormatter.
"""
from __future__ import annotations

import base64
import binascii
import datetime
import enum
import json
import re
import time
from typing import Any

from google.protobuf.message import DecodeError

from minipulsar.client import Message, MessageId
from minipulsar.proto import PulsarApi_pb2 as api


class WebSocketError(enum.IntEnum):
    """Pulsar's WebSocketError codes; description() is Pulsar's text for each."""

    FailedToCreateProducer = 1
    FailedToSubscribe = 2
    FailedToDeserializeFromJSON = 3
    FailedToSerializeToJSON = 4
    AuthenticationError = 5
    NotAuthorizedError = 6
    PayloadEncodingError = 7
    UnknownError = 8

    def description(self) -> str:
        return _DESCRIPTIONS[self]

    @property
    def close_code(self) -> int:
        """The WebSocket close code that carries this error: 4000 + Pulsar's code. Pulsar's own
        codes (1-8) are outside the range RFC 6455 lets a close frame carry (1000-4999), so
        browsers and websocket-client would report a protocol error instead of them."""
        return 4000 + int(self)


_DESCRIPTIONS = {
    WebSocketError.FailedToCreateProducer: "Failed to create producer",
    WebSocketError.FailedToSubscribe: "Failed to subscribe",
    WebSocketError.FailedToDeserializeFromJSON: "Failed to de-serialize from JSON",
    WebSocketError.FailedToSerializeToJSON: "Failed to serialize to JSON",
    WebSocketError.AuthenticationError: "Failed to authenticate client",
    WebSocketError.NotAuthorizedError: "Client is not authorized",
    WebSocketError.PayloadEncodingError: "Invalid payload encoding",
    WebSocketError.UnknownError: "Unknown error",
}


def dumps(value: Any) -> str:
    """Compact JSON, as Jackson writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---- producer ----------------------------------------------------------------------------
def producer_ok(message_id: MessageId, context: str | None) -> dict:
    """ProducerAck of a stored message."""
    return _without_none({"result": "ok", "messageId": encode_message_id(message_id), "context": context})


def producer_error(error: WebSocketError, message: str, context: str | None) -> dict:
    """ProducerAck of a message that was not stored."""
    return _without_none({"result": f"send-error:{int(error)}", "errorMsg": message, "context": context})


def _without_none(fields: dict) -> dict:
    return {key: value for key, value in fields.items() if value is not None}


# ---- consumer and reader -----------------------------------------------------------------
def consumer_message(message: Message) -> dict:
    """ConsumerMessage of a received message (Pulsar's field order)."""
    fields = {
        "messageId": encode_message_id(message.message_id()),
        "payload": base64.b64encode(message.data()).decode("ascii"),
        "properties": message.properties(),
        "publishTime": format_time(message.publish_timestamp()),
        "redeliveryCount": message.redelivery_count(),
    }
    if message.event_timestamp():
        fields["eventTime"] = format_time(message.event_timestamp())
    if message.partition_key():
        fields["key"] = message.partition_key()
    return fields


def end_of_topic(reached: bool) -> dict:
    """EndOfTopicResponse."""
    return {"endOfTopic": reached}


# ---- message ids and base64 --------------------------------------------------------------
def encode_message_id(message_id: MessageId) -> str:
    return base64.b64encode(message_id.serialize()).decode("ascii")


def decode_message_id(text: Any) -> MessageId:
    """The MessageId of base64 MessageIdData; raises ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"messageId must be a base64 string, got {text!r}")
    proto = api.MessageIdData()
    try:
        proto.ParseFromString(decode_base64(text))
    except DecodeError as exc:
        raise ValueError(f"messageId {text!r} is not a serialized MessageIdData: {exc}") from None
    if not proto.IsInitialized():  # ledgerId and entryId are required
        raise ValueError(f"messageId {text!r} is not a serialized MessageIdData: required fields missing")
    return MessageId.from_proto(proto)


_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def decode_base64(text: str) -> bytes:
    """Standard base64 as Java's Base64.getDecoder() reads it: the alphabet only (no whitespace),
    padding optional. Raises ValueError."""
    if not _BASE64.fullmatch(text) or len(text.rstrip("=")) % 4 == 1:
        raise ValueError(f"Illegal base64 character or length in {text[:40]!r}")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from None


# ---- times -------------------------------------------------------------------------------
def format_time(millis: int) -> str:
    """ISO_OFFSET_DATE_TIME of a time in milliseconds since the epoch, in the machine's zone."""
    seconds, ms = divmod(millis, 1000)
    local = time.localtime(seconds)  # every message has one: cheaper than datetime's astimezone
    text = time.strftime("%Y-%m-%dT%H:%M:%S", local)
    if ms:
        text += f".{ms:03d}".rstrip("0")
    return text + _format_offset(local.tm_gmtoff)


def _format_offset(seconds: int) -> str:
    if seconds == 0:
        return "Z"
    sign = "+" if seconds > 0 else "-"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if secs else "")


def parse_time(text: Any) -> int:
    """Milliseconds since the epoch of an ISO-8601 time with its offset (what Java's
    ISO_OFFSET_DATE_TIME parses); raises ValueError naming the text."""
    if not isinstance(text, str):
        raise ValueError(f"Text {text!r} could not be parsed: not a string")
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"Text '{text}' could not be parsed: {exc}") from None
    if moment.tzinfo is None:
        raise ValueError(f"Text '{text}' could not be parsed: no zone offset")
    return (moment - _EPOCH) // datetime.timedelta(milliseconds=1)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
