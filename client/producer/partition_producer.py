"""The producer of one (partition) topic: creation, sending, receipts, batching, timeouts, and
re-creation after a lost connection.

Sends are queued in order as OpSend entries; each SEND_RECEIPT must answer the head of the queue
(a sequence id below it is a stale duplicate and ignored; one above it means the broker and we
disagree, so the connection is closed and everything pending is resent). On reconnect the producer
is re-created with the same name and epoch + 1, and every pending SEND is written again in order.
Source: Pulsar's C++ ProducerImpl (ackReceived, resendMessages, failPendingMessages).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minipulsar.client.connection import ClientConnection
from minipulsar.client.exceptions import (AlreadyClosed, ChecksumError, MessageTooBig, ProducerQueueIsFull, Timeout)
from minipulsar.client.handler import HandlerBase
from minipulsar.client.message_id import MessageId
from minipulsar.client.options import BatchingType, CompressionType, HashingScheme
from minipulsar.client.producer.batch import BatchContainer, OpSend, PendingMessage, build_batch, build_single
from minipulsar.client.schema import BytesSchema, Schema
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.client.client import Client

log = logging.getLogger(__name__)
Type = api.BaseCommand.Type


@dataclass
class ProducerConfig:
    """create_producer options (names and defaults as in pulsar.Client.create_producer)."""

    producer_name: str | None = None
    schema: Schema = field(default_factory=BytesSchema)
    initial_sequence_id: int | None = None
    send_timeout_millis: int = 30000
    compression_type: CompressionType = CompressionType.NONE
    max_pending_messages: int = 1000
    block_if_queue_full: bool = False
    batching_enabled: bool = False
    batching_max_messages: int = 1000
    batching_max_allowed_size_in_bytes: int = 128 * 1024
    batching_max_publish_delay_ms: int = 10
    batching_type: BatchingType = BatchingType.Default
    properties: dict[str, str] | None = None
    access_mode: int = api.Shared
    initial_subscription_name: str | None = None  # PRODUCER.initial_subscription_name (dead-letter topics)
    hashing_scheme: HashingScheme = HashingScheme.BoostHash  # partition of a keyed message


class PartitionProducer(HandlerBase):
    """partition: index of this partition (-1 for a non-partitioned topic)."""

    def __init__(self, client: "Client", topic: str, conf: ProducerConfig, partition: int = -1):
        super().__init__(client, topic)
        self.conf = conf
        self.partition = partition
        self.producer_id = client.new_producer_id()
        self.name = conf.producer_name
        self._user_named = conf.producer_name is not None
        self.epoch = 0
        self._next_seq = conf.initial_sequence_id + 1 if conf.initial_sequence_id is not None else 0
        self.last_sequence_id = conf.initial_sequence_id if conf.initial_sequence_id is not None else -1
        self.schema_version: bytes | None = None
        self.max_message_size = 5 * 1024 * 1024
        self._pending: collections.deque[OpSend] = collections.deque()
        self._pending_count = 0
        self._space = asyncio.Event()
        self._space.set()
        self._batch = BatchContainer(conf.batching_type == BatchingType.KeyBased) if conf.batching_enabled else None
        self._batch_timer: asyncio.TimerHandle | None = None
        self._timeout_task: asyncio.Task | None = None

    def __repr__(self) -> str:
        return f"Producer({self.topic}, {self.name or '?'}, id={self.producer_id})"

    # ---- connection ------------------------------------------------------------------------
    async def _connection_opened(self, cnx: ClientConnection) -> None:
        request_id = self.client.new_request_id()
        command = api.CommandProducer(
            topic=self.topic, producer_id=self.producer_id, request_id=request_id, epoch=self.epoch,
            user_provided_producer_name=self._user_named, encrypted=False,
            producer_access_mode=self.conf.access_mode,
        )
        if self.name:
            command.producer_name = self.name
        if self.conf.initial_subscription_name:
            command.initial_subscription_name = self.conf.initial_subscription_name
        for key, value in (self.conf.properties or {}).items():
            command.metadata.add(key=key, value=value)
        schema = self.conf.schema.schema_info()
        if schema is not None:
            command.schema.CopyFrom(schema)
        cnx.producers[self.producer_id] = self
        try:
            reply = await cnx.request(api.BaseCommand(type=Type.PRODUCER, producer=command), request_id)
        except BaseException as exc:
            cnx.producers.pop(self.producer_id, None)
            if isinstance(exc, Timeout):
                self._send_close(cnx)
            raise
        self.name = reply.producer_name
        self.max_message_size = cnx.max_message_size
        if reply.schema_version:
            self.schema_version = reply.schema_version
        if not self._ever_connected and self.conf.initial_sequence_id is None and reply.last_sequence_id >= 0:
            self.last_sequence_id = reply.last_sequence_id
            self._next_seq = reply.last_sequence_id + 1
        log.info("%s: created on %s (epoch %d)", self, cnx.logical_url, self.epoch)

    def _close_command(self, request_id: int) -> api.BaseCommand:
        return api.BaseCommand(type=Type.CLOSE_PRODUCER, close_producer=api.CommandCloseProducer(
            producer_id=self.producer_id, request_id=request_id))

    def _after_connected(self) -> None:
        if self._pending:
            log.info("%s: resending %d pending entries", self, len(self._pending))
        for op in self._pending:
            self.cnx.write(op.frame)
        if self._timeout_task is None and self.conf.send_timeout_millis > 0:
            self._timeout_task = asyncio.get_running_loop().create_task(self._timeout_loop())

    def _connection_lost(self) -> None:
        self.epoch += 1

    def _on_terminal_failure(self, exc: Exception) -> None:
        self._fail_all(exc)

    # ---- sending ---------------------------------------------------------------------------
    async def send_async(self, msg: PendingMessage) -> asyncio.Future:
        """Queue msg (waiting for room when block_if_queue_full); returns msg.future."""
        self._check_usable()
        if len(msg.payload) > self.max_message_size and (self._batch is not None or self.conf.compression_type == CompressionType.NONE):
            raise MessageTooBig(f"message of {len(msg.payload)} bytes exceeds max_message_size {self.max_message_size}")
        if 0 < self._pending_count < self.conf.max_pending_messages:
            self._pending_count += 1  # fast path: room in the queue, nothing to wait for
        else:
            await self._reserve()
        try:
            self._assign_sequence(msg)
            if self._batch is not None and msg.deliver_at is None:
                self._add_to_batch(msg)
            else:
                self._flush_batch()
                op = build_single(self.producer_id, self.name, msg, self.conf.compression_type, self.schema_version)
                if len(op.frame) > self.max_message_size + 10 * 1024:
                    raise MessageTooBig(f"compressed message exceeds max_message_size {self.max_message_size}")
                self._enqueue(op)
        except BaseException:
            self._release(1)
            raise
        return msg.future

    def _check_usable(self) -> None:
        if self.closed:
            raise AlreadyClosed(f"{self} is closed")
        if self.failed is not None:
            raise self.failed

    def _assign_sequence(self, msg: PendingMessage) -> None:
        if msg.sequence_id is None:
            msg.sequence_id = self._next_seq
            self._next_seq += 1

    async def _reserve(self) -> None:
        limit = self.conf.max_pending_messages
        if limit <= 0:
            self._pending_count += 1
            return
        while self._pending_count >= limit:
            if not self.conf.block_if_queue_full:
                raise ProducerQueueIsFull(f"{self}: {limit} messages pending")
            self._space.clear()
            await self._space.wait()
            self._check_usable()
        self._pending_count += 1

    def _release(self, count: int) -> None:
        self._pending_count -= count
        if self._pending_count < self.conf.max_pending_messages:
            self._space.set()

    def _add_to_batch(self, msg: PendingMessage) -> None:
        batch = self._batch
        batch.add(msg)
        if batch.count >= self.conf.batching_max_messages or batch.size_bytes >= self.conf.batching_max_allowed_size_in_bytes:
            self._flush_batch()
        elif self._batch_timer is None:
            delay = self.conf.batching_max_publish_delay_ms / 1000.0
            self._batch_timer = asyncio.get_running_loop().call_later(delay, self._flush_batch)

    def _flush_batch(self) -> None:
        """Turn whatever is batched into SEND frames now."""
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        if self._batch is None or not self._batch.count:
            return
        for group in self._batch.drain():
            try:
                op = build_batch(self.producer_id, self.name, group, self.conf.compression_type, self.schema_version)
            except Exception as exc:  # noqa: BLE001 - a codec failure fails these messages only
                self._complete_failed(group, exc)
                continue
            self._enqueue(op)

    def _enqueue(self, op: OpSend) -> None:
        self._pending.append(op)
        if self.cnx is not None:
            self.cnx.write(op.frame)

    # ---- receipts --------------------------------------------------------------------------
    def on_send_receipt(self, receipt: api.CommandSendReceipt) -> None:
        seq = receipt.sequence_id
        if not self._pending:
            log.debug("%s: receipt for %d with nothing pending", self, seq)
            return
        op = self._pending[0]
        if seq < op.first_seq:
            log.debug("%s: stale receipt %d (head is %d)", self, seq, op.first_seq)
            return
        if seq > op.last_seq:
            log.error("%s: receipt %d is ahead of the head entry %d..%d; reconnecting", self, seq, op.first_seq, op.last_seq)
            if self.cnx is not None:
                self.cnx.close()
            return
        self._pending.popleft()
        ledger, entry = receipt.message_id.ledgerId, receipt.message_id.entryId
        count = len(op.messages)
        for index, msg in enumerate(op.messages):
            message_id = MessageId(self.partition, ledger, entry, index if op.batched else -1,
                                   count if op.batched else 0, self.topic)
            self._complete(msg, None, message_id)
        self.last_sequence_id = max(self.last_sequence_id, op.last_seq)
        self._release(count)

    def on_send_error(self, cnx: ClientConnection, error: api.CommandSendError) -> None:
        if error.error == api.ChecksumError and self._pending and self._pending[0].first_seq <= error.sequence_id <= self._pending[0].last_seq:
            op = self._pending.popleft()
            self._complete_failed(op.messages, ChecksumError(error.message))
            return
        log.warning("%s: SEND_ERROR %s for %d: %s; reconnecting", self, api.ServerError.Name(error.error),
                    error.sequence_id, error.message)
        cnx.close()

    def _complete(self, msg: PendingMessage, exc: Exception | None, message_id: MessageId | None) -> None:
        if not msg.future.done():
            if exc is None:
                msg.future.set_result(message_id)
            else:
                msg.future.set_exception(exc)
                msg.future.exception()  # a caller that never awaits must not make asyncio complain
        if msg.callback is not None:
            try:
                msg.callback(exc, message_id)
            except Exception:  # noqa: BLE001 - user code
                log.exception("%s: send callback failed", self)

    def _complete_failed(self, messages: list[PendingMessage], exc: Exception) -> None:
        for msg in messages:
            self._complete(msg, exc, None)
        self._release(len(messages))

    def _fail_all(self, exc: Exception) -> None:
        if self._batch is not None:
            for group in self._batch.drain():
                self._complete_failed(group, exc)
        while self._pending:
            self._complete_failed(self._pending.popleft().messages, exc)

    async def _timeout_loop(self) -> None:
        """Fail entries whose receipt is later than send_timeout_millis."""
        timeout = self.conf.send_timeout_millis / 1000.0
        while not self.closed:
            await asyncio.sleep(min(timeout, 0.5))
            now = time.monotonic()
            while self._pending and now - self._pending[0].created >= timeout:
                op = self._pending.popleft()
                log.warning("%s: send timeout for sequence %d..%d", self, op.first_seq, op.last_seq)
                self._complete_failed(op.messages, Timeout(f"send timeout after {timeout:.1f} s"))

    # ---- flush and close -------------------------------------------------------------------
    async def flush(self) -> None:
        """Send what is batched and wait until every message sent so far has its receipt."""
        self._flush_batch()
        if self._pending:
            # Receipts complete entries in order (and failures pop from the head), so the last
            # message's future is done only when everything before it is.
            last = self._pending[-1].messages[-1].future
            await asyncio.wait([last])

    async def close(self) -> None:
        """Flush (bounded by the send timeout), then CLOSE_PRODUCER; later sends raise AlreadyClosed."""
        if self.closed:
            return
        if self.cnx is not None and self.failed is None:
            try:
                async with asyncio.timeout(max(self.conf.send_timeout_millis / 1000.0, 1.0) or None):
                    await self.flush()
            except TimeoutError:
                log.warning("%s: closing with %d entries unconfirmed", self, len(self._pending))
        self.stop_reconnecting()
        if self._timeout_task is not None:
            self._timeout_task.cancel()
        cnx, self.cnx = self.cnx, None
        if cnx is not None and not cnx.closed:
            await self._request_close(cnx)
            cnx.producers.pop(self.producer_id, None)
        self._fail_all(AlreadyClosed(f"{self} closed"))
        self._space.set()
