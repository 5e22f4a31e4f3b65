"""The consumer session: messages pushed to the socket, commands read from it.

Commands (Pulsar's ConsumerCommand):
- {"messageId": id}: acknowledge (any type other than those below is an acknowledgement too, as
  in Pulsar); in push mode one more message may go out;
- {"type": "negativeAcknowledge", "messageId": id}: redelivered after negativeAckRedeliveryDelay;
- {"type": "permit", "permitMessages": N}: pull mode lets N more messages out (ignored in push mode);
- {"type": "unsubscribe"}: delete the subscription; the session then closes with 1000;
- {"type": "isEndOfTopic"}: answered {"endOfTopic": true|false}.
A frame that is not a JSON object, a missing or undecodable messageId, a permit without
permitMessages close the session with FailedToDeserializeFromJSON (close code 4003); a failed
unsubscribe with UnknownError (4008). An id the consumer cannot place (another topic's partition)
is logged and dropped, as Pulsar drops the failed acknowledgement. Acknowledgements already made
are flushed when the session ends, before the client's consumer closes.
Source: Pulsar ConsumerHandler.onWebSocketText (handleAck, handleNack, handlePermit,
handleUnsubscribe, handleEndOfTopic).
"""
from __future__ import annotations

import logging

from aiohttp import WSCloseCode, web

from minipulsar.broker.web.websocket.delivery import CommandError, DeliverySession, parse_command
from minipulsar.broker.web.websocket.formats import WebSocketError, decode_message_id
from minipulsar.broker.web.websocket.session import SessionSettings
from minipulsar.client import Consumer, Message, MessageId, OperationNotSupported

log = logging.getLogger(__name__)


class ConsumerSession(DeliverySession):
    """consumer: the bundled client's consumer on the session's subscription; pull_mode: deliver
    only what permits allow."""

    def __init__(self, ws: web.WebSocketResponse, settings: SessionSettings, label: str, consumer: Consumer,
                 max_pending: int, pull_mode: bool):
        super().__init__(ws, settings, label, max_pending)
        self.consumer = consumer
        self.pull_mode = pull_mode

    async def next_message(self) -> Message:
        return await self.consumer.receive()

    def reached_end_of_topic(self) -> bool:
        return self.consumer.has_reached_end_of_topic()

    async def on_text(self, text: str) -> None:
        try:
            command = parse_command(text)
            kind = command.get("type")
            if kind == "permit":
                self._permit(command)
            elif kind == "unsubscribe":
                await self._unsubscribe()
            elif kind == "isEndOfTopic":
                await self.answer_end_of_topic()
            else:
                await self._acknowledge(_message_id(command), negative=kind == "negativeAcknowledge")
        except CommandError as exc:
            await self.refuse(exc)

    def _permit(self, command: dict) -> None:
        permits = command.get("permitMessages")
        if not isinstance(permits, int) or isinstance(permits, bool):
            raise CommandError("Missing required permitMessages field for 'permit' command")
        if self.pull_mode:
            self.release_pending(permits)

    async def _acknowledge(self, message_id: MessageId, negative: bool) -> None:
        try:
            if negative:
                await self.consumer.negative_acknowledge(message_id)
            else:
                await self.consumer.acknowledge(message_id)
        except OperationNotSupported as exc:
            log.warning("%s: dropped the acknowledgement of %s: %s", self.label, message_id, exc)
        if not self.pull_mode:
            self.release_pending()

    async def _unsubscribe(self) -> None:
        try:
            await self.consumer.unsubscribe()
        except Exception as exc:  # the broker refused (other consumers attached, ...)
            await self.close_with_error(WebSocketError.UnknownError, f"unsubscribe failed: {exc}")
            return
        await self.close_with(WSCloseCode.OK, "Unsubscribed")

    async def release(self) -> None:
        await self.consumer.close()  # flushes the acknowledgements first


def _message_id(command: dict) -> MessageId:
    try:
        return decode_message_id(command.get("messageId"))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
