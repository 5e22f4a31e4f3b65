"""The replicator's producer on the remote broker: the bundled client's partition producer, sending
stored entries as they are instead of building new messages.

send_entry(data, num_messages) writes one SEND whose headers-and-payload are `data` (the original
entry with replicated_from added), numbered with this producer's own sequence ids; the bundled
client's queue, in-order receipts, reconnection with back-off and resend of everything unconfirmed
after a reconnect all apply unchanged. Batching is off and the send timeout is 0 (never time out),
as for Pulsar's replicator producer. Source: Pulsar GeoPersistentReplicator / ProducerImpl with
AUTO_PRODUCE_BYTES.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from minipulsar.broker.replication.misdirection import is_refusal
from minipulsar.client.client import Client
from minipulsar.client.exceptions import AlreadyClosed
from minipulsar.client.producer.batch import OpSend, PendingMessage
from minipulsar.client.producer.partition_producer import PartitionProducer, ProducerConfig
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import encode_payload_command

log = logging.getLogger(__name__)


class RemoteProducer(PartitionProducer):
    """topic: the same topic name on the remote cluster; name: pulsar.repl.<local>--><remote>;
    on_refused: called with the error when a reconnection reaches a broker that refuses this
    producer as misdirected (broker/replication/misdirection.py)."""

    def __init__(self, client: Client, topic: str, name: str, queue_size: int,
                 on_refused: Callable[[Exception], None] | None = None):
        conf = ProducerConfig(producer_name=name, send_timeout_millis=0, batching_enabled=False,
                              max_pending_messages=queue_size, block_if_queue_full=True)
        super().__init__(client, topic, conf)
        self.on_refused = on_refused

    @property
    def connected(self) -> bool:
        return self.cnx is not None and not self.closed

    def _reconnect_failed(self, exc: Exception) -> None:
        if self.on_refused is not None and is_refusal(exc):
            self.on_refused(exc)
        else:
            super()._reconnect_failed(exc)

    def send_entry(self, data: bytes, num_messages: int) -> asyncio.Future:
        """Queue one stored entry; the future resolves to the remote MessageId or fails
        (AlreadyClosed when the producer is closed first). The caller bounds how many are in flight."""
        self._check_usable()
        msg = PendingMessage(data, asyncio.get_running_loop().create_future())
        self._pending_count += 1
        self._assign_sequence(msg)
        send = api.CommandSend(producer_id=self.producer_id, sequence_id=msg.sequence_id,
                               num_messages=max(1, num_messages))
        frame = encode_payload_command(api.BaseCommand(type=api.BaseCommand.SEND, send=send), data)
        self._enqueue(OpSend(msg.sequence_id, msg.sequence_id, [msg], frame, batched=False))
        return msg.future

    async def close_now(self) -> None:
        """Close without waiting for receipts: what is unconfirmed is read again from the cursor
        by the next replicator."""
        self.stop_reconnecting()
        cnx, self.cnx = self.cnx, None
        if cnx is not None and not cnx.closed:
            request_id = self.client.new_request_id()
            try:
                async with asyncio.timeout(2):
                    await cnx.request(api.BaseCommand(type=api.BaseCommand.CLOSE_PRODUCER,
                                                      close_producer=api.CommandCloseProducer(
                                                          producer_id=self.producer_id, request_id=request_id)),
                                      request_id)
            except Exception as exc:  # noqa: BLE001 - closing anyway
                log.debug("%s: CLOSE_PRODUCER failed: %s", self, exc)
            cnx.producers.pop(self.producer_id, None)
        self._fail_all(AlreadyClosed(f"{self} closed"))
