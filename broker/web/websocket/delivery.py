"""What consumer and reader sessions share: pushing messages to the socket under a bound.

Messages go out as Pulsar's ConsumerMessage, one text frame each, in the order the bundled
client's consumer or reader hands them over. At most `max_pending` messages the client has not
acknowledged are outstanding on the socket (push mode: the receiver queue size, at least 1);
in pull mode `max_pending` is 0 and each {"type": "permit", "permitMessages": N} lets N more out.
Sending also waits for the socket to drain, so a slow client holds messages in the broker
(unacknowledged, redelivered if the session ends), not in memory here. Source: Pulsar
ConsumerHandler / ReaderHandler (receiveMessage, pendingMessages, maxPendingMessages,
checkResumeReceive, handlePermit, handleEndOfTopic).
"""
from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import WSCloseCode, web

from minipulsar.broker.web.websocket.formats import WebSocketError, consumer_message, end_of_topic
from minipulsar.broker.web.websocket.session import Session, SessionSettings
from minipulsar.client import AlreadyClosed, Message

log = logging.getLogger(__name__)


class CommandError(ValueError):
    """A command the session cannot read: the session closes with FailedToDeserializeFromJSON."""


def parse_command(text: str) -> dict:
    """A ConsumerCommand ({"type", "messageId", "permitMessages"}); raises CommandError."""
    try:
        command = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"not JSON: {exc}") from None
    if not isinstance(command, dict):
        raise CommandError(f"expected an object, got {type(command).__name__}")
    return command


class DeliverySession(Session):
    """max_pending: messages the client may hold unacknowledged (0 in pull mode)."""

    def __init__(self, ws: web.WebSocketResponse, settings: SessionSettings, label: str, max_pending: int):
        super().__init__(ws, settings, label)
        self.max_pending = max_pending
        self.pending = 0  # sent and not yet acknowledged, less the permits granted (pull mode)
        self._credit = asyncio.Event()

    # ---- defined by the consumer and reader sessions ----------------------------------------
    async def next_message(self) -> Message:
        """The next message of the client handle; raises AlreadyClosed once it is closed."""
        raise NotImplementedError

    def reached_end_of_topic(self) -> bool:
        raise NotImplementedError

    # ---- delivery ---------------------------------------------------------------------------
    async def start(self) -> None:
        self._update_credit()
        self.spawn(self._deliver())

    def release_pending(self, count: int = 1) -> None:
        """count messages were acknowledged (or permitted, in pull mode): more may go."""
        self.pending -= count
        self._update_credit()

    def _update_credit(self) -> None:
        if self.pending < self.max_pending:
            self._credit.set()
        else:
            self._credit.clear()

    async def _deliver(self) -> None:
        try:
            while True:
                await self._credit.wait()
                message = await self.next_message()
                await self.send_json(consumer_message(message))
                self.pending += 1
                self._update_credit()
        except AlreadyClosed:
            log.info("%s: the consumer closed; nothing more to deliver", self.label)
        except ConnectionResetError:  # the socket is closing; what was not acknowledged comes again
            pass
        except Exception as exc:  # a bug ends this session only (1011), its messages come again
            log.exception("%s: delivery failed", self.label)
            self.close_soon(WSCloseCode.INTERNAL_ERROR, f"{WebSocketError.UnknownError.description()}: {exc}")

    async def answer_end_of_topic(self) -> None:
        """{"endOfTopic": ...}: whether the topic was terminated and everything read."""
        await self.send_json(end_of_topic(self.reached_end_of_topic()))

    async def refuse(self, error: CommandError) -> None:
        await self.close_with_error(WebSocketError.FailedToDeserializeFromJSON, str(error))
