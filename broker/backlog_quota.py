"""Backlog quotas: how much a topic's slowest durable subscription may lag, and what happens past it.

A namespace's backlog_quota_map holds up to two quotas: destination_storage (limitSize, bytes of
the slowest subscription's backlog) and message_age (limitTime, seconds since its oldest
unacknowledged message was published); -1 means no limit. Without a namespace quota the broker's
backlogQuotaDefaultLimitBytes / backlogQuotaDefaultLimitSecond / backlogQuotaDefaultRetentionPolicy
apply. Past a quota, by its policy:
  * producer_request_hold: new producers are refused with ProducerBlockedQuotaExceededError and
    connected ones are disconnected (clients retry until the backlog shrinks);
  * producer_exception: the same with ProducerBlockedQuotaExceededException;
  * consumer_backlog_eviction: the subscriptions over the quota are moved forward (their oldest
    backlog is acknowledged) until they are within it.
Checked when a producer is created and every backlogQuotaCheckIntervalInSeconds.
Source: Pulsar BacklogQuota, BacklogQuotaManager, PersistentTopic.checkBacklogQuotaExceeded.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Iterable

from minipulsar.broker.entry_info import publish_time_of
from minipulsar.broker.errors import BrokerError
from minipulsar.proto import PulsarApi_pb2 as api

if TYPE_CHECKING:
    from minipulsar.broker.config import BrokerConfig
    from minipulsar.broker.namespace_policies import NamespacePolicies
    from minipulsar.broker.subscription import Subscription
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)

QUOTA_TYPES = ("destination_storage", "message_age")
RETENTION_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")


class ProducerBlockedQuotaExceededError(BrokerError):
    server_error = api.ProducerBlockedQuotaExceededError


class ProducerBlockedQuotaExceededException(BrokerError):
    server_error = api.ProducerBlockedQuotaExceededException


def parse_quota(value: Any) -> dict:
    """A BacklogQuota JSON object {"limitSize": bytes, "limitTime": seconds, "policy": ...};
    raises ValueError naming what is wrong. "limit" is Pulsar's deprecated name of limitSize."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a BacklogQuota object, got {value!r}")
    size, seconds = value.get("limitSize", value.get("limit", -1)), value.get("limitTime", -1)
    for name, number in (("limitSize", size), ("limitTime", seconds)):
        if not isinstance(number, int) or isinstance(number, bool) or number < -1:
            raise ValueError(f"{name} must be an integer >= -1, got {number!r}")
    policy = value.get("policy", "producer_request_hold")
    if policy not in RETENTION_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(RETENTION_POLICIES)}, got {policy!r}")
    return {"limitSize": size, "limitTime": seconds, "policy": policy}


class BacklogQuotas:
    """The quotas of each namespace (its backlogQuota policy, else the backlogQuotaDefault*
    settings) and their enforcement on producers and on the periodic check."""

    def __init__(self, policies: "NamespacePolicies", config: "BrokerConfig"):
        self.policies = policies
        self.config = config

    def quotas(self, namespace: str) -> dict[str, dict]:
        """{quota type: quota} in force for the namespace (its own map, else the defaults)."""
        stored = self.policies.get(namespace, "backlogQuota")
        if stored:
            return stored
        config = self.config
        default = {"limitSize": config.backlog_quota_default_limit_bytes,
                   "limitTime": config.backlog_quota_default_limit_second,
                   "policy": config.backlog_quota_default_retention_policy}
        return {"destination_storage": default, "message_age": default}

    def backlog_bytes(self, subscription: "Subscription") -> int:
        ledger = subscription.topic.ledger
        return ledger.size_between(subscription.cursor.mark_delete_position, ledger.last_confirmed_position)

    async def oldest_age_seconds(self, subscription: "Subscription") -> float:
        """Seconds since the oldest unacknowledged message was published (0 without backlog)."""
        cursor = subscription.cursor
        if not cursor.has_more_entries() and not subscription.backlog:
            return 0.0
        first = cursor.next_valid_position(cursor.mark_delete_position)
        entries, _ = await cursor.replay_entries([first])
        if not entries:
            return 0.0
        return max(0.0, time.time() - publish_time_of(entries[0].data) / 1000)

    async def exceeded(self, topic: "PersistentTopic") -> list[tuple[str, dict, list["Subscription"]]]:
        """(quota type, quota, subscriptions over it) for every quota the topic exceeds."""
        found = []
        durable = [s for s in topic.subscriptions.values() if s.durable]
        for kind, quota in self.quotas(topic.name.namespace_name).items():
            if kind == "destination_storage" and quota["limitSize"] >= 0:
                over = [s for s in durable if self.backlog_bytes(s) > quota["limitSize"]]
            elif kind == "message_age" and quota["limitTime"] >= 0:
                over = [s for s in durable if await self.oldest_age_seconds(s) > quota["limitTime"]]
            else:
                continue
            if over:
                found.append((kind, quota, over))
        return found

    async def check_producer(self, topic: "PersistentTopic") -> None:
        """Raise the policy's ProducerBlockedQuotaExceeded error when a producer-blocking quota is exceeded."""
        for kind, quota, _ in await self.exceeded(topic):
            reason = f"Cannot create producer on topic with backlog quota exceeded ({kind})"
            if quota["policy"] == "producer_request_hold":
                raise ProducerBlockedQuotaExceededError(reason)
            if quota["policy"] == "producer_exception":
                raise ProducerBlockedQuotaExceededException(reason)

    async def check_all(self, topics: Iterable["PersistentTopic"]) -> None:
        """Enforce every quota on each of topics (the periodic check over the loaded topics)."""
        for topic in list(topics):
            for kind, quota, over in await self.exceeded(topic):
                if quota["policy"] == "consumer_backlog_eviction":
                    await self._evict(kind, quota, over)
                else:
                    log.info("%s: backlog quota %s exceeded; disconnecting producers", topic.name, kind)
                    for producer in list(topic.producers.values()):
                        producer.disconnect()

    async def _evict(self, kind: str, quota: dict, subscriptions: list["Subscription"]) -> None:
        for subscription in subscriptions:
            log.info("%s: backlog quota %s exceeded; evicting the oldest backlog", subscription, kind)
            if kind == "message_age":
                await subscription.expire_messages(quota["limitTime"])
            else:
                subscription.acknowledge_up_to(subscription.topic.ledger.position_leaving_backlog(quota["limitSize"]))
