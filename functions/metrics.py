"""Prometheus families of the running instances, with the names and labels of Pulsar's Python
instance (function_stats.Stats): labels tenant, namespace (tenant/namespace), name, instance_id,
cluster, fqfn.

pulsar_function_received_total, _processed_successfully_total, _system_exceptions_total,
_user_exceptions_total (counters), pulsar_function_process_latency_ms (a summary: _count and
_sum, milliseconds), pulsar_function_last_invocation (ms since the epoch), the *_1min gauges of
the current minute (pulsar_function_received_total_1min, ..., pulsar_function_process_latency_ms_1min
as _count/_sum), and pulsar_function_user_metric (a summary per `metric` label, from
Context.record_metric). The broker's GET /metrics serves them beside its own.
"""
from __future__ import annotations

from typing import Iterable

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily

from minipulsar.functions.supervisor import InstanceSupervisor

LABELS = ("tenant", "namespace", "name", "instance_id", "cluster", "fqfn")
_COUNTERS = (("received_total", "receivedTotal", "Total number of messages received from source."),
             ("processed_successfully_total", "processedSuccessfullyTotal", "Total number of messages processed successfully."),
             ("system_exceptions_total", "systemExceptionsTotal", "Total number of system exceptions."),
             ("user_exceptions_total", "userExceptionsTotal", "Total number of user exceptions."))
PREFIX = "pulsar_function_"


def families(instances: Iterable[tuple[str, int, InstanceSupervisor]], cluster: str) -> list[Metric]:
    """The families of (fqfn, instance id, supervisor) of every running instance."""
    counters = {key: CounterMetricFamily(PREFIX + name, text, labels=LABELS) for name, key, text in _COUNTERS}
    minute = {key: GaugeMetricFamily(f"{PREFIX}{name}_1min", text.replace(".", " in the last 1 minute."), labels=LABELS)
              for name, key, text in _COUNTERS}
    latency = SummaryMetricFamily(PREFIX + "process_latency_ms", "Process latency in milliseconds.", labels=LABELS)
    latency_minute = SummaryMetricFamily(PREFIX + "process_latency_ms_1min",
                                         "Process latency in milliseconds in the last 1 minute.", labels=LABELS)
    last = GaugeMetricFamily(PREFIX + "last_invocation", "The timestamp of the last invocation of the function.",
                             labels=LABELS)
    user = SummaryMetricFamily(PREFIX + "user_metric", "Pulsar Function user defined metric",
                               labels=(*LABELS, "metric"))
    for fqfn, instance_id, supervisor in instances:
        stats = supervisor.stats
        if not stats:
            continue
        tenant, namespace, name = fqfn.split("/")
        labels = [tenant, f"{tenant}/{namespace}", name, str(instance_id), cluster, fqfn]
        for key, family in counters.items():
            family.add_metric(labels, stats.get(key, 0))
            minute[key].add_metric(labels, stats.get("1min", {}).get(key, 0))
        latency.add_metric(labels, stats.get("latencyCount", 0), stats.get("latencySumMs", 0.0))
        one_minute = stats.get("1min", {})
        latency_minute.add_metric(labels, one_minute.get("processedSuccessfullyTotal", 0),
                                  one_minute.get("avgProcessLatency", 0.0) * one_minute.get("processedSuccessfullyTotal", 0))
        last.add_metric(labels, stats.get("lastInvocation", 0))
        for metric in _user_metric_names(stats.get("userMetrics", {})):
            user.add_metric([*labels, metric], stats["userMetrics"][f"user_metric_{metric}_count"],
                            stats["userMetrics"][f"user_metric_{metric}_sum"])
    return [family for family in (*counters.values(), *minute.values(), latency, latency_minute, last, user)
            if family.samples]


def _user_metric_names(user_metrics: dict) -> list[str]:
    return sorted(key[len("user_metric_"):-len("_count")] for key in user_metrics
                  if key.startswith("user_metric_") and key.endswith("_count"))
