"""The JSON of a function's status and stats, from its instances' latest reports, in Pulsar's
shapes and units.

- FunctionStatus {numInstances, numRunning, instances: [{instanceId, status}]}; an instance's
  FunctionInstanceStatusData {running, error, numRestarts, numReceived, numSuccessfullyProcessed,
  numUserExceptions, latestUserExceptions, numSystemExceptions, latestSystemExceptions,
  averageLatency (ms), lastInvocationTime (ms since the epoch, 0 before the first), workerId};
  the exceptions are [{exceptionString, timestampMs}].
- FunctionStats {receivedTotal, processedSuccessfullyTotal, systemExceptionsTotal,
  userExceptionsTotal, avgProcessLatency (ms; null when nothing was processed), "1min": {the same
  five over the current minute}, lastInvocation (null before the first), instances: [{instanceId,
  metrics: FunctionInstanceStatsData (the same plus userMetrics)}]}; the function's figures are
  the sums over instances, its latencies the mean of the instances that have one (Pulsar's
  FunctionStatsImpl.calculateOverall).

Counters belong to the current process of an instance, as in Pulsar: a restarted instance starts
again from 0 (numRestarts says it restarted). Source: Pulsar FunctionStatus, FunctionStatsImpl,
FunctionInstanceStatsDataImpl, ComponentImpl.getFunctionInstanceStats.
"""
from __future__ import annotations

from minipulsar.functions.metadata import FunctionRecord
from minipulsar.functions.supervisor import InstanceSupervisor

_FIVE = ("receivedTotal", "processedSuccessfullyTotal", "systemExceptionsTotal", "userExceptionsTotal")


def instance_status(supervisor: InstanceSupervisor | None, worker_id: str) -> dict:
    """FunctionInstanceStatusData of one instance (None: not running, e.g. stopped)."""
    stats = supervisor.stats if supervisor is not None else {}
    return {
        "running": bool(supervisor and supervisor.running),
        "error": supervisor.error if supervisor is not None else "",
        "numRestarts": supervisor.restarts if supervisor is not None else 0,
        "numReceived": stats.get("receivedTotal", 0),
        "numSuccessfullyProcessed": stats.get("processedSuccessfullyTotal", 0),
        "numUserExceptions": stats.get("userExceptionsTotal", 0),
        "latestUserExceptions": list(stats.get("latestUserExceptions", [])),
        "numSystemExceptions": stats.get("systemExceptionsTotal", 0),
        "latestSystemExceptions": list(stats.get("latestSystemExceptions", [])),
        "averageLatency": float(stats.get("avgProcessLatency", 0.0)),
        "lastInvocationTime": stats.get("lastInvocation", 0),
        "workerId": worker_id,
    }


def function_status(record: FunctionRecord, supervisors: dict[int, InstanceSupervisor], worker_id: str) -> dict:
    instances = [{"instanceId": i, "status": instance_status(supervisors.get(i), worker_id)}
                 for i in range(record.parallelism)]
    return {"numInstances": record.parallelism, "numRunning": sum(i["status"]["running"] for i in instances),
            "instances": instances}


def _figures(counts: dict) -> dict:
    figures = {key: counts.get(key, 0) for key in _FIVE}
    figures["avgProcessLatency"] = counts.get("avgProcessLatency") if counts.get("processedSuccessfullyTotal") else None
    return figures


def instance_stats(supervisor: InstanceSupervisor | None) -> dict:
    """FunctionInstanceStatsData of one instance (zeros and nulls when it is not running)."""
    stats = supervisor.stats if supervisor is not None else {}
    return {**_figures(stats), "1min": _figures(stats.get("1min", {})),
            "lastInvocation": stats.get("lastInvocation") or None, "userMetrics": dict(stats.get("userMetrics", {}))}


def function_stats(record: FunctionRecord, supervisors: dict[int, InstanceSupervisor]) -> dict:
    instances = [{"instanceId": i, "metrics": instance_stats(supervisors.get(i))} for i in range(record.parallelism)]
    metrics = [i["metrics"] for i in instances]
    overall = {**_sum(metrics), "1min": _sum([m["1min"] for m in metrics])}
    invocations = [m["lastInvocation"] for m in metrics if m["lastInvocation"] is not None]
    overall["lastInvocation"] = max(invocations) if invocations else None
    overall["instances"] = instances
    return overall


def _sum(figures: list[dict]) -> dict:
    total = {key: sum(f[key] for f in figures) for key in _FIVE}
    latencies = [f["avgProcessLatency"] for f in figures if f["avgProcessLatency"] is not None]
    total["avgProcessLatency"] = sum(latencies) / len(latencies) if latencies else None
    return total
