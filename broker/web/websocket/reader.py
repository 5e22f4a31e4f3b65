"""The reader session: a non-durable reader's messages pushed to the socket.

The reader starts at the `messageId` query parameter (earliest, latest or a base64 id; the id
itself is not read again, as a Java reader's start is exclusive). Its client answers each message
with any text frame, an "acknowledgement" that only lets one more message out: the reader keeps
its position itself and the broker keeps nothing. {"type": "isEndOfTopic"} is answered
{"endOfTopic": true|false}. A frame that is not a JSON object closes the session with
FailedToDeserializeFromJSON (4003). Source: Pulsar ReaderHandler.onWebSocketText.
"""
from __future__ import annotations

from aiohttp import web

from minipulsar.broker.web.websocket.delivery import CommandError, DeliverySession, parse_command
from minipulsar.broker.web.websocket.session import SessionSettings
from minipulsar.client import Message, Reader


class ReaderSession(DeliverySession):
    """reader: the bundled client's reader on the session's topic."""

    def __init__(self, ws: web.WebSocketResponse, settings: SessionSettings, label: str, reader: Reader,
                 max_pending: int):
        super().__init__(ws, settings, label, max_pending)
        self.reader = reader

    async def next_message(self) -> Message:
        return await self.reader.read_next()

    def reached_end_of_topic(self) -> bool:
        return self.reader.has_reached_end_of_topic()

    async def on_text(self, text: str) -> None:
        try:
            command = parse_command(text)
        except CommandError as exc:
            await self.refuse(exc)
            return
        if command.get("type") == "isEndOfTopic":
            await self.answer_end_of_topic()
        else:
            self.release_pending()

    async def release(self) -> None:
        await self.reader.close()
