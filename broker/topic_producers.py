"""The producers of a topic, by name: the part persistent and non-persistent topics share.

A producer name is unique on a topic while connected (ProducerBusyError otherwise), and a leaving
producer also leaves the topic's access-mode bookkeeping. Source: Pulsar AbstractTopic
(addProducer, removeProducer).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from minipulsar.broker.errors import ProducerBusyError

if TYPE_CHECKING:
    from minipulsar.broker.access_modes import ProducerAccess
    from minipulsar.broker.producer import Producer
    from minipulsar.broker.server import Broker


class TopicProducers:
    """Mixin for topics with `name`, `broker`, `producers` (name -> Producer) and `access` (ProducerAccess)."""

    producers: dict[str, "Producer"]
    access: "ProducerAccess"
    broker: "Broker"
    last_active: float  # time.monotonic() when last seen in use (broker/inactive_topics.py)

    def add_producer(self, producer: "Producer") -> None:
        """Register producer; raises ProducerBusyError when its name is taken on this topic or the
        topic has maxProducersPerTopic producers (broker/limits.py)."""
        existing = self.producers.get(producer.name)
        if existing is not None and existing is not producer:
            raise ProducerBusyError(f"Producer with name '{producer.name}' is already connected to topic {self.name}")
        if existing is None:
            self.broker.limits.check_producer_room(self, producer.name)
        self.producers[producer.name] = producer

    def remove_producer(self, producer: "Producer") -> None:
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
            self.last_active = time.monotonic()  # broker/inactive_topics.py
        self.access.removed(producer)
