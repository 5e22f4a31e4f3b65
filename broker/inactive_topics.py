"""Deleting inactive topics, as Pulsar's broker does by default (brokerDeleteInactiveTopicsEnabled).

Every brokerDeleteInactiveTopicsFrequencySeconds (60) each loaded topic is checked. It is active
while it has a producer or a connected consumer or, by brokerDeleteInactiveTopicsMode:
- delete_when_no_subscriptions (default): any subscription;
- delete_when_subscriptions_caught_up: a subscription with a backlog.
A topic inactive for brokerDeleteInactiveTopicsMaxInactiveDurationSeconds (0: the frequency, as
Pulsar's unset value) is deleted with its ledger, unless its namespace's retention keeps it: a
negative retention time keeps it for good, a positive one while it has been inactive for less than
that time. A partition is deleted on its own; the partitioned topic's metadata stays.
Never deleted here (Pulsar treats them differently): topics of the pulsar/system namespace, topics
that replicate (Pulsar stops their replicators first) and topics with a compacted view (whose
__compaction cursor is a subscription in Pulsar).
Source: Pulsar PersistentTopic / NonPersistentTopic checkGC, isActive, shouldTopicBeRetained.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minipulsar.broker.compaction import COMPACTION_CURSOR
from minipulsar.broker.errors import BrokerError

if TYPE_CHECKING:
    from minipulsar.broker.broker import Broker

log = logging.getLogger(__name__)

class InactiveTopics:
    """check() deletes the loaded topics inactive for too long. A topic's `last_active`
    (time.monotonic()) is set when it loads, when a producer or consumer leaves it (so clients
    that come and go between two checks keep it), and by each check that finds it active."""

    def __init__(self, broker: "Broker"):
        self.broker = broker

    def _max_inactive_seconds(self) -> int:
        config = self.broker.config
        return (config.broker_delete_inactive_topics_max_inactive_duration_seconds
                or config.broker_delete_inactive_topics_frequency_seconds)

    async def check(self) -> list[str]:
        """Delete every loaded topic inactive for longer than allowed; returns their names."""
        if not self.broker.config.broker_delete_inactive_topics_enabled:
            return []
        now = time.monotonic()
        loaded = {**self.broker.topics, **self.broker.non_persistent_topics}
        deleted = []
        for name, topic in loaded.items():
            if self._exempt(topic) or self._active(topic):
                topic.last_active = now
                continue
            inactive_for = now - topic.last_active
            if inactive_for > self._max_inactive_seconds() and not self._retained(topic, inactive_for):
                if await self._delete(topic):
                    deleted.append(name)
        return deleted

    def _exempt(self, topic) -> bool:
        if topic.name.namespace_name == "pulsar/system":
            return True
        if not topic.persistent:
            return False
        return topic.replication.active or COMPACTION_CURSOR in topic.ledger.cursors

    def _active(self, topic) -> bool:
        """In use (a producer or a connected consumer: Pulsar's usage count), or kept by the mode."""
        subscriptions = topic.subscriptions.values()
        if topic.producers or any(subscription.consumers for subscription in subscriptions):
            return True
        if self.broker.config.broker_delete_inactive_topics_mode == "delete_when_subscriptions_caught_up":
            return any(subscription.backlog > 0 for subscription in subscriptions)
        return bool(topic.subscriptions)

    def _retained(self, topic, inactive_for: float) -> bool:
        minutes, _ = self.broker.policies.retention(topic.name.namespace_name)
        return minutes < 0 or inactive_for < minutes * 60

    async def _delete(self, topic) -> bool:
        try:
            await self.broker.topic_admin.delete(topic.name, force=False)
        except BrokerError as exc:  # it became busy meanwhile, or went: the next check decides
            log.info("inactive topic %s not deleted: %s", topic.name, exc)
            return False
        log.info("deleted topic %s: inactive for more than %d s (brokerDeleteInactiveTopicsEnabled)",
                 topic.name, self._max_inactive_seconds())
        return True
