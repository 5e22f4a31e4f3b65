"""Producer access modes and the topic epoch (PIP-68).

Per topic, producers are admitted by their ProducerAccessMode:
  * Shared (0): any number; refused with ProducerBusy while an exclusive producer holds the topic
    or exclusive producers wait for it.
  * Exclusive (1): only when no other producer is connected; otherwise ProducerFenced.
  * WaitForExclusive (2): like Exclusive, but instead of failing it is queued; the client gets
    PRODUCER_SUCCESS with producer_ready=false at once and a second one with producer_ready=true
    when the holder leaves (queued producers are promoted in arrival order).
  * ExclusiveWithFencing (3): closes (fences) every connected producer and fails every queued one,
    then takes the topic.
Each time an exclusive producer takes the topic the topic epoch grows by one (the first one is 0),
unless a reconnecting producer brings its own topic_epoch, which is kept. A producer whose
topic_epoch is older than the topic's is fenced (ProducerFenced): someone else held the topic
since. The epoch is returned in PRODUCER_SUCCESS.topic_epoch and kept in the broker metadata
store so it survives restarts (Pulsar keeps it in the managed-ledger properties).
Source: Pulsar AbstractTopic.incrementTopicEpochIfNeeded / removeProducer, ServerCnx.handleProducer.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from minipulsar.broker.errors import ProducerBusyError, ProducerFencedError
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.broker.producer import Producer
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)

MODE_NAMES = {api.Shared: "Shared", api.Exclusive: "Exclusive", api.WaitForExclusive: "WaitForExclusive",
              api.ExclusiveWithFencing: "ExclusiveWithFencing"}
EPOCHS_KEY = "topicEpochs"


class ProducerAccess:
    """The access state of one topic: the exclusive holder, the queue of waiting producers, the epoch."""

    def __init__(self, topic: "PersistentTopic"):
        self.topic = topic
        self.exclusive: Producer | None = None
        self.waiting: list[tuple[Producer, asyncio.Future]] = []
        epochs = topic.context.metadata.data.get(EPOCHS_KEY, {})
        self.epoch: int | None = epochs.get(str(topic.name))

    async def admit(self, producer: "Producer", on_queued: Callable[[], None]) -> int | None:
        """Admit producer under its access mode; returns the topic epoch for PRODUCER_SUCCESS
        (None when the topic never had an exclusive producer). For WaitForExclusive this may wait:
        on_queued() runs first (the producer_ready=false answer). Raises ProducerBusyError or
        ProducerFencedError; CancelledError when the producer goes away while queued."""
        mode = producer.access_mode
        wanted_epoch = producer.requested_topic_epoch
        if mode == api.Shared:
            if self.exclusive is not None or self.waiting:
                raise ProducerBusyError(f"Topic has an existing exclusive producer: {self._holder_name()}")
            return self.epoch
        if mode == api.Exclusive:
            if self.exclusive is not None or self.waiting:
                raise ProducerFencedError(f"Topic has an existing exclusive producer: {self._holder_name()}")
            if self.topic.producers:
                raise ProducerFencedError("Topic has existing shared producers")
            self._check_epoch(wanted_epoch)
            return await self._take(producer, wanted_epoch)
        if mode == api.ExclusiveWithFencing:
            if self.exclusive is not None or self.topic.producers or self.waiting:
                self._fence_all()
            self._check_epoch(wanted_epoch)
            return await self._take(producer, wanted_epoch)
        if mode == api.WaitForExclusive:
            if self.exclusive is not None or self.topic.producers:
                future = asyncio.get_running_loop().create_future()
                self.waiting.append((producer, future))
                log.info("%s: queuing %s until the topic is free", self.topic.name, producer)
                on_queued()
                return await future
            self._check_epoch(wanted_epoch)
            return await self._take(producer, wanted_epoch)
        raise ProducerBusyError(f"unknown producer access mode {mode}")

    def _holder_name(self) -> str:
        return self.exclusive.name if self.exclusive is not None else "(queued)"

    def _check_epoch(self, wanted: int | None) -> None:
        if wanted is not None and self.epoch is not None and wanted < self.epoch:
            raise ProducerFencedError(
                f"Topic epoch has already moved. Current epoch: {self.epoch}, Producer epoch: {wanted}")

    async def _take(self, producer: "Producer", wanted: int | None) -> int:
        """producer becomes the exclusive holder; the epoch moves (or is set) and is persisted."""
        self.exclusive = producer
        new_epoch = wanted if wanted is not None else (self.epoch + 1 if self.epoch is not None else 0)
        if new_epoch != self.epoch:
            self.epoch = new_epoch
            metadata = self.topic.context.metadata
            metadata.data.setdefault(EPOCHS_KEY, {})[str(self.topic.name)] = new_epoch
            await metadata.save()
        return new_epoch

    def _fence_all(self) -> None:
        """ExclusiveWithFencing: fail the queued producers and close every connected one."""
        waiting, self.waiting = self.waiting, []
        for producer, future in waiting:
            if not future.done():
                future.set_exception(ProducerFencedError("Topic has an existing exclusive producer"))
        for current in list(self.topic.producers.values()):
            log.info("%s: fencing %s", self.topic.name, current)
            current.disconnect()
        self.exclusive = None

    def removed(self, producer: "Producer") -> None:
        """producer left (closed, fenced, disconnected): drop it from the queue, or free the topic;
        once no producer is connected (the exclusive holder, or the last shared producer, left)
        the first queued producer takes the topic."""
        for index, (queued, future) in enumerate(self.waiting):
            if queued is producer:
                del self.waiting[index]
                if not future.done():
                    future.cancel()
                return
        if self.exclusive is producer:
            self.exclusive = None
        elif self.exclusive is not None:
            return
        if any(p is not producer for p in self.topic.producers.values()):
            return
        while self.waiting:
            queued, future = self.waiting.pop(0)
            if future.done() or queued.closed:
                continue
            self.exclusive = queued
            self.topic.context.spawn(self._promote(queued, future))
            return

    async def _promote(self, producer: "Producer", future: asyncio.Future) -> None:
        try:
            epoch = await self._take(producer, None)
        except Exception as exc:  # a failed metadata write fails the waiting producer
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(epoch)
