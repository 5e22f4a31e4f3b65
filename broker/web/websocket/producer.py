"""The producer session: each text frame is one message to publish, answered with a ProducerAck.

A frame is Pulsar's ProducerMessage: {"payload": base64 (required), "properties": {...},
"context": str, "key": str, "replicationClusters": [str], "eventTime": ISO-8601 with offset,
"deliverAt": ms since the epoch, "deliverAfterMs": ms}; unknown fields are ignored, and scalars
are taken as strings where a string is expected, as Jackson reads them. It goes to the bundled
client's producer at once (send_async: no waiting for earlier receipts) and its answer leaves when
the broker has stored it: {"result": "ok", "messageId", "context"}. Refusals are answered on the
socket and the session goes on:
- send-error:3 (FailedToDeserializeFromJSON, no context): not JSON, not an object, a field of the
  wrong type;
- send-error:7 (PayloadEncodingError): no payload, bad base64, an eventTime that does not parse;
- send-error:8 (UnknownError): the send failed (maxPendingMessages reached, as the queue refuses
  rather than blocks; a timeout; a terminated topic; ...).
Source: Pulsar ProducerHandler.onWebSocketText and ProducerMessage.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from aiohttp import web

from minipulsar.broker.web.websocket.formats import (WebSocketError, decode_base64, parse_time, producer_error,
                                                     producer_ok)
from minipulsar.broker.web.websocket.session import Session, SessionSettings
from minipulsar.client import MessageId, Producer

log = logging.getLogger(__name__)


class BadField(ValueError):
    """A ProducerMessage field of the wrong type (Jackson's mapping error)."""


class PayloadError(ValueError):
    """The payload or eventTime cannot be decoded (Pulsar's PayloadEncodingError)."""


class ProducerSession(Session):
    """producer: the bundled client's producer on the session's topic."""

    def __init__(self, ws: web.WebSocketResponse, settings: SessionSettings, label: str, producer: Producer):
        super().__init__(ws, settings, label)
        self.producer = producer
        self._answers: asyncio.Queue[dict] = asyncio.Queue()  # ProducerAcks in completion order

    async def start(self) -> None:
        self.spawn(self._answer())

    async def on_text(self, text: str) -> None:
        try:
            request = _parse(text)
        except BadField as exc:
            await self.send_json(producer_error(WebSocketError.FailedToDeserializeFromJSON, str(exc), None))
            return
        context = _text_field(request, "context")
        try:
            send = _send_arguments(request)
        except BadField as exc:
            await self.send_json(producer_error(WebSocketError.FailedToDeserializeFromJSON, str(exc), None))
            return
        except PayloadError as exc:
            await self.send_json(producer_error(WebSocketError.PayloadEncodingError, str(exc), context))
            return
        try:
            await self.producer.send_async(callback=lambda exc, message_id: self._sent(exc, message_id, context), **send)
        except Exception as exc:  # the queue is full, the producer closed, the message is too big
            await self.send_json(producer_error(WebSocketError.UnknownError, str(exc) or type(exc).__name__, context))

    def _sent(self, exc: Exception | None, message_id: MessageId | None, context: str | None) -> None:
        if exc is not None:
            log.warning("%s: send failed: %s", self.label, exc)
            self._answers.put_nowait(producer_error(WebSocketError.UnknownError, str(exc) or type(exc).__name__,
                                                    context))
        else:
            self._answers.put_nowait(producer_ok(message_id, context))

    async def _answer(self) -> None:
        """Write the answers as the receipts come (one writer keeps them in that order)."""
        while True:
            answer = await self._answers.get()
            try:
                await self.send_json(answer)
            except ConnectionResetError:  # the client left; its messages are stored all the same
                return

    async def release(self) -> None:
        await self.producer.close()  # waits for the receipts still due (bounded by the send timeout)


def _parse(text: str) -> dict:
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadField(f"Failed to parse JSON: {exc}") from None
    if not isinstance(request, dict):
        raise BadField(f"Cannot deserialize ProducerMessage from {type(request).__name__}")
    return request


def _send_arguments(request: dict) -> dict:
    """send_async keyword arguments; raises BadField or PayloadError."""
    payload = _text_field(request, "payload")
    if payload is None:
        raise PayloadError("payload is missing")
    try:
        content = decode_base64(payload)
    except ValueError as exc:
        raise PayloadError(f"Invalid Base64 message-payload error={exc}") from None
    arguments: dict[str, Any] = {"content": content}
    properties = request.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            raise BadField("properties must be an object of strings")
        arguments["properties"] = {key: _scalar_text(value, f"properties.{key}") for key, value in properties.items()}
    key = _text_field(request, "key")
    if key is not None:
        arguments["partition_key"] = key
    clusters = request.get("replicationClusters")
    if clusters is not None:
        if not isinstance(clusters, list):
            raise BadField("replicationClusters must be an array of strings")
        arguments["replication_clusters"] = [_scalar_text(c, "replicationClusters") for c in clusters]
    event_time = _text_field(request, "eventTime")
    if event_time is not None:
        try:
            arguments["event_timestamp"] = parse_time(event_time)
        except ValueError as exc:
            raise PayloadError(str(exc)) from None
    deliver_at, deliver_after = _long_field(request, "deliverAt"), _long_field(request, "deliverAfterMs")
    if deliver_at > 0:
        arguments["deliver_at"] = deliver_at
    if deliver_after > 0:
        arguments["deliver_after"] = deliver_after
    return arguments


def _text_field(request: dict, name: str) -> str | None:
    value = request.get(name)
    return None if value is None else _scalar_text(value, name)


def _scalar_text(value: Any, name: str) -> str:
    """A JSON scalar as Jackson coerces it into a String field (true -> "true", 1 -> "1")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return value if isinstance(value, str) else json.dumps(value)
    raise BadField(f"Cannot deserialize value of type `java.lang.String` from {type(value).__name__} ({name})")


def _long_field(request: dict, name: str) -> int:
    """A long field (0 when absent), from a number or a numeric string, as Jackson reads it."""
    value = request.get(name)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise BadField(f"Cannot deserialize value of type `long` from {value!r} ({name})")
