"""The JSON shapes of Pulsar's topic stats (GET .../stats, .../partitioned-stats), with every field
Pulsar 4.x's admin API answers and its zero value.

Each object's stats() starts from these dicts and fills what minipulsar knows, so a field it
cannot fill still carries Pulsar's zero value (docs/compatibility.md lists them); fields Pulsar
leaves null (activeConsumerName without an active consumer, topicEpoch before any exclusive
producer) are None in-process and left out of the REST answers (without_nulls), as Pulsar's JSON
leaves them out. Units are Pulsar's: rates in msg/s and
bytes/s over the last statsUpdateFrequencyInSecs interval (broker/stats_rates.py), counters since
the topic loaded, sizes in bytes, timestamps in ms since the epoch.
Source: Pulsar TopicStatsImpl, SubscriptionStatsImpl, ConsumerStatsImpl, PublisherStatsImpl,
ReplicatorStatsImpl, PartitionedTopicStatsImpl (their fields and their add() sums).
"""
from __future__ import annotations

import time

TOPIC_ZERO = {
    "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
    "bytesInCounter": 0, "msgInCounter": 0, "systemTopicBytesInCounter": 0, "bytesOutCounter": 0,
    "msgOutCounter": 0, "bytesOutInternalCounter": 0, "averageMsgSize": 0.0, "msgChunkPublished": False,
    "storageSize": 0, "backlogSize": 0, "backlogQuotaLimitSize": -1, "backlogQuotaLimitTime": -1,
    "oldestBacklogMessageAgeSeconds": -1, "publishRateLimitedTimes": 0, "earliestMsgPublishTimeInBacklogs": 0,
    "offloadedStorageSize": 0, "lastOffloadLedgerId": 0, "lastOffloadSuccessTimeStamp": 0,
    "lastOffloadFailureTimeStamp": 0, "ongoingTxnCount": 0, "abortedTxnCount": 0, "committedTxnCount": 0,
    "publishers": [], "waitingPublishers": 0, "subscriptions": {}, "replication": {},
    "deduplicationStatus": "Disabled", "nonContiguousDeletedMessagesRanges": 0,
    "nonContiguousDeletedMessagesRangesSerializedSize": 0, "delayedMessageIndexSizeInBytes": 0,
    "topicCreationTimeStamp": 0, "lastPublishTimeStamp": 0,
}

PUBLISHER_ZERO = {
    "accessMode": "Shared", "msgRateIn": 0.0, "msgThroughputIn": 0.0, "averageMsgSize": 0.0,
    "chunkedMessageRate": 0.0, "producerId": 0, "supportsPartialProducer": False, "metadata": {},
}

SUBSCRIPTION_ZERO = {
    "msgRateOut": 0.0, "msgThroughputOut": 0.0, "bytesOutCounter": 0, "msgOutCounter": 0,
    "msgRateRedeliver": 0.0, "messageAckRate": 0.0, "chunkedMessageRate": 0.0, "msgBacklog": 0,
    "backlogSize": 0, "earliestMsgPublishTimeInBacklog": 0, "msgBacklogNoDelayed": 0,
    "blockedSubscriptionOnUnackedMsgs": False, "msgDelayed": 0, "msgInReplay": 0, "unackedMessages": 0,
    "type": "None", "msgRateExpired": 0.0, "totalMsgExpired": 0, "lastExpireTimestamp": 0,
    "lastConsumedFlowTimestamp": 0, "lastConsumedTimestamp": 0, "lastAckedTimestamp": 0,
    "lastMarkDeleteAdvancedTimestamp": 0, "consumers": [], "isDurable": False, "isReplicated": False,
    "allowOutOfOrderDelivery": False, "consumersAfterMarkDeletePosition": {}, "drainingHashesCount": 0,
    "drainingHashesClearedTotal": 0, "drainingHashesUnackedMessages": 0, "nonContiguousDeletedMessagesRanges": 0,
    "nonContiguousDeletedMessagesRangesSerializedSize": 0, "delayedMessageIndexSizeInBytes": 0,
    "subscriptionProperties": {}, "filterProcessedMsgCount": 0, "filterAcceptedMsgCount": 0,
    "filterRejectedMsgCount": 0, "filterRescheduledMsgCount": 0,
    "dispatchThrottledMsgEventsBySubscriptionLimit": 0, "dispatchThrottledBytesEventsBySubscriptionLimit": 0,
    "dispatchThrottledMsgEventsByTopicLimit": 0, "dispatchThrottledBytesEventsByTopicLimit": 0,
    "dispatchThrottledMsgEventsByBrokerLimit": 0, "dispatchThrottledBytesEventsByBrokerLimit": 0,
}

CONSUMER_ZERO = {
    "msgRateOut": 0.0, "msgThroughputOut": 0.0, "bytesOutCounter": 0, "msgOutCounter": 0,
    "msgRateRedeliver": 0.0, "messageAckRate": 0.0, "chunkedMessageRate": 0.0, "availablePermits": 0,
    "unackedMessages": 0, "avgMessagesPerEntry": 0, "blockedConsumerOnUnackedMsgs": False,
    "drainingHashesCount": 0, "drainingHashesClearedTotal": 0, "drainingHashesUnackedMessages": 0,
    "lastAckedTimestamp": 0, "lastConsumedTimestamp": 0, "firstMessagesSentTimestamp": 0,
    "lastConsumedFlowTimestamp": 0, "firstConsumedFlowTimestamp": 0, "metadata": {},
}

REPLICATOR_ZERO = {
    "msgRateIn": 0.0, "msgInCount": 0, "msgThroughputIn": 0.0, "bytesInCount": 0, "msgRateOut": 0.0,
    "msgOutCount": 0, "msgThroughputOut": 0.0, "bytesOutCount": 0, "msgRateExpired": 0.0,
    "msgExpiredCount": 0, "replicationBacklog": 0, "connected": False, "replicationDelayInSeconds": 0,
}


def without_nulls(value):
    """value with every None field left out, at any depth: Pulsar's admin API writes its stats
    with Jackson's NON_NULL inclusion (activeConsumerName without an active consumer, a
    replicator's inboundConnection without one, topicEpoch before any exclusive producer)."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every *Timestamp field."""
    return int(time.time() * 1000)


def date_text(millis: int) -> str:
    """Pulsar's DateFormatter.format: ISO-8601 UTC with milliseconds ("1970-01-01T00:00:00Z" at 0)."""
    seconds, ms = divmod(millis, 1000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{text}.{ms:03d}Z" if ms else f"{text}Z"


def average_size(throughput: float, rate: float) -> float:
    """averageMsgSize: bytes/s over msg/s, 0 when nothing was published (Pulsar's formula)."""
    return throughput / rate if rate else 0.0


# ---- partitioned topics (PartitionedTopicStatsImpl.add) --------------------------------------
_TOPIC_SUMS = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
               "bytesOutCounter", "msgOutCounter", "waitingPublishers", "storageSize", "backlogSize",
               "publishRateLimitedTimes", "offloadedStorageSize", "nonContiguousDeletedMessagesRanges",
               "nonContiguousDeletedMessagesRangesSerializedSize", "delayedMessageIndexSizeInBytes",
               "numberOfEntries")
_SUBSCRIPTION_SUMS = ("msgRateOut", "msgThroughputOut", "bytesOutCounter", "msgOutCounter", "msgRateRedeliver",
                      "messageAckRate", "chunkedMessageRate", "msgBacklog", "backlogSize", "msgBacklogNoDelayed",
                      "msgDelayed", "msgInReplay", "unackedMessages", "msgRateExpired", "totalMsgExpired",
                      "nonContiguousDeletedMessagesRanges", "nonContiguousDeletedMessagesRangesSerializedSize",
                      "delayedMessageIndexSizeInBytes", "filterProcessedMsgCount", "filterAcceptedMsgCount",
                      "filterRejectedMsgCount", "filterRescheduledMsgCount")
_SUBSCRIPTION_LATEST = ("lastExpireTimestamp", "lastConsumedFlowTimestamp", "lastConsumedTimestamp",
                        "lastAckedTimestamp", "lastMarkDeleteAdvancedTimestamp")
_REPLICATOR_SUMS = ("msgRateIn", "msgInCount", "msgThroughputIn", "bytesInCount", "msgRateOut", "msgOutCount",
                    "msgThroughputOut", "bytesOutCount", "msgRateExpired", "msgExpiredCount", "replicationBacklog")


def sum_topic_stats(parts: list[dict]) -> dict:
    """A partitioned topic's stats from its partitions': rates, counters and sizes summed,
    averageMsgSize averaged over the partitions, subscriptions and replicators merged by name
    (their numbers summed, their consumers listed together), publishers listed together."""
    total = {**TOPIC_ZERO, "publishers": [], "subscriptions": {}, "replication": {}}
    for part in parts:
        for key in _TOPIC_SUMS:
            total[key] = total.get(key, 0) + part.get(key, 0)
        total["averageMsgSize"] += part.get("averageMsgSize", 0.0) / len(parts)
        total["msgChunkPublished"] = total["msgChunkPublished"] or part.get("msgChunkPublished", False)
        total["deduplicationStatus"] = part.get("deduplicationStatus", total["deduplicationStatus"])
        total["publishers"].extend(part.get("publishers", ()))
        for name, sub in part.get("subscriptions", {}).items():
            _merge_subscription(total["subscriptions"], name, sub)
        for remote, replicator in part.get("replication", {}).items():
            _merge_replicator(total["replication"], remote, replicator)
    return total


def _merge_subscription(merged_by_name: dict, name: str, sub: dict) -> None:
    merged = merged_by_name.get(name)
    if merged is None:
        merged_by_name[name] = {**sub, "consumers": list(sub.get("consumers", ()))}
        return
    for key in _SUBSCRIPTION_SUMS:
        merged[key] = merged.get(key, 0) + sub.get(key, 0)
    for key in _SUBSCRIPTION_LATEST:
        merged[key] = max(merged.get(key, 0), sub.get(key, 0))
    merged["isDurable"] = merged.get("isDurable", False) or sub.get("isDurable", False)
    merged["isReplicated"] = merged.get("isReplicated", False) or sub.get("isReplicated", False)
    merged["consumers"].extend(sub.get("consumers", ()))


def _merge_replicator(merged_by_remote: dict, remote: str, replicator: dict) -> None:
    merged = merged_by_remote.get(remote)
    if merged is None:
        merged_by_remote[remote] = dict(replicator)
        return
    for key in _REPLICATOR_SUMS:
        merged[key] = merged.get(key, 0) + replicator.get(key, 0)
    merged["connected"] = merged.get("connected", False) and replicator.get("connected", False)
    merged["replicationDelayInSeconds"] = max(merged.get("replicationDelayInSeconds", 0),
                                              replicator.get("replicationDelayInSeconds", 0))
