"""Pulsar's stats rates and shapes without a broker: a RateMeter over its counters' growth, the
JSON shapes' zero values, and a partitioned topic's sums."""
from __future__ import annotations

import pytest

from minipulsar.broker.stats_rates import RateMeter
from minipulsar.broker.stats_shapes import (SUBSCRIPTION_ZERO, TOPIC_ZERO, average_size, date_text,
                                            sum_topic_stats, without_nulls)


def test_rate_meter_reports_the_last_interval_only():
    meter = RateMeter(2)
    start = meter._stamp
    assert meter.rates == (0.0, 0.0)  # before the first tick
    meter.update(start + 2.0, (100, 5000))
    assert meter.rates == (50.0, 2500.0)
    meter.update(start + 3.0, (130, 6000))
    assert meter.rates == (30.0, 1000.0)
    meter.update(start + 4.0, (130, 6000))  # an idle interval
    assert meter.rates == (0.0, 0.0)
    meter.update(start + 4.0, (999, 999))  # no time passed: nothing to compute
    assert meter.rates == (0.0, 0.0)
    meter.update(start + 5.0, (10, 10))  # a counter that restarted counts from 0
    assert meter.rates == (10.0, 10.0)


def test_average_size_and_dates_are_pulsars():
    assert average_size(2000.0, 10.0) == 200.0 and average_size(0.0, 0.0) == 0.0
    assert date_text(0) == "1970-01-01T00:00:00Z"
    assert date_text(1761383046982) == "2025-10-25T09:04:06.982Z"


def part(rate: float, messages: int, backlog: int, consumers: int) -> dict:
    sub = {**SUBSCRIPTION_ZERO, "msgRateOut": rate, "msgBacklog": backlog, "isDurable": True,
           "lastAckedTimestamp": messages, "consumers": [{"consumerName": f"c{i}"} for i in range(consumers)]}
    return {**TOPIC_ZERO, "msgRateIn": rate, "msgInCounter": messages, "averageMsgSize": 100.0 + messages,
            "storageSize": messages * 10, "publishers": [{"producerName": f"p{messages}"}],
            "subscriptions": {"sub": sub},
            "replication": {"east": {"msgRateOut": rate, "replicationBacklog": backlog, "connected": True,
                                     "replicationDelayInSeconds": messages}}}


def test_partitioned_stats_sum_the_partitions():
    total = sum_topic_stats([part(1.5, 10, 3, 1), part(2.5, 30, 4, 2)])
    assert set(TOPIC_ZERO) <= set(total)
    assert (total["msgRateIn"], total["msgInCounter"], total["storageSize"]) == (4.0, 40, 400)
    assert total["averageMsgSize"] == pytest.approx(120.0)  # averaged over the partitions, as Pulsar
    assert [p["producerName"] for p in total["publishers"]] == ["p10", "p30"]
    sub = total["subscriptions"]["sub"]
    assert (sub["msgRateOut"], sub["msgBacklog"], sub["lastAckedTimestamp"], len(sub["consumers"])) == (4.0, 7, 30, 3)
    east = total["replication"]["east"]
    assert (east["msgRateOut"], east["replicationBacklog"], east["replicationDelayInSeconds"]) == (4.0, 7, 30)
    assert sum_topic_stats([])["msgInCounter"] == 0


def test_null_fields_are_left_out_at_any_depth_as_pulsars_json():
    stats = {"topicEpoch": None, "subscriptions": {"s": {"activeConsumerName": None, "consumers": [
        {"readPositionWhenJoining": None, "consumerName": "c"}]}}, "replication": {"r": {"inboundConnection": None}}}
    assert without_nulls(stats) == {"subscriptions": {"s": {"consumers": [{"consumerName": "c"}]}},
                                     "replication": {"r": {}}}
