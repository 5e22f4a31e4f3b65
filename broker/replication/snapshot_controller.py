"""The per-topic replicated-subscriptions controller: builds cluster snapshots and answers them.

Snapshot protocol (PIP-33), run every replicatedSubscriptionsSnapshotFrequencyMillis while the
topic has remote clusters and at least one replicated subscription:

1. pending snapshots older than replicatedSubscriptionsSnapshotTimeoutSeconds are dropped;
   nothing starts while snapshots are pending and none has ever completed (so a silent remote is
   retried at the timeout pace), nor when no data entry was written since the last completed
   snapshot started, nor while any replicator is disconnected;
2. a SNAPSHOT_REQUEST marker {snapshot_id (uuid4), source_cluster = local} is written with no
   replicate_to, so every replicator carries it;
3. a cluster receiving a request (through its replicator toward the origin) answers with a
   SNAPSHOT_RESPONSE marker {snapshot_id, cluster = {own name, position of the request entry}},
   replicate_to = [origin];
4. the origin records the first answer per cluster; when all remotes answered, with more than one
   remote a second round of requests runs (answers must come again, positions of round 1 are kept);
5. then a SNAPSHOT marker {snapshot_id, local_message_id = where the last answer was stored,
   clusters = round-1 positions} is written with replicate_to = [local], so it stays here.

Subscriptions add snapshots to their SnapshotCache as their dispatcher reads past them; when a
mark-delete position passes one, an UPDATE marker {subscription_name, clusters} goes everywhere,
and each cluster cumulatively acknowledges its own position (topic_replication.apply_update).
Source: PIP-33 / Pulsar ReplicatedSubscriptionsController, ReplicatedSubscriptionsSnapshotBuilder.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from minipulsar.broker.replication import markers as mk
from minipulsar.proto import PulsarMarkers_pb2 as pm
from minipulsar.storage import Position

if TYPE_CHECKING:
    from minipulsar.broker.replication.topic_replication import TopicReplication

log = logging.getLogger(__name__)


class SnapshotBuilder:
    """One snapshot in progress. remotes: cluster names that must answer (every round)."""

    def __init__(self, snapshot_id: str, remotes: list[str], started: float):
        self.snapshot_id = snapshot_id
        self.remotes = set(remotes)
        self.started = started  # time.monotonic()
        self.rounds = 2 if len(remotes) > 1 else 1
        self.round = 1
        self.positions: dict[str, Position] = {}  # round-1 answers: cluster -> its position
        self.answered: set[str] = set()  # answers in the current round

    def on_response(self, cluster: str, position: Position) -> str:
        """Record an answer; returns 'wait', 'next-round' or 'complete'."""
        if cluster not in self.remotes or cluster in self.answered:
            return "wait"
        self.answered.add(cluster)
        if self.round == 1:
            self.positions.setdefault(cluster, position)
        if self.answered != self.remotes:
            return "wait"
        if self.round < self.rounds:
            self.round += 1
            self.answered = set()
            return "next-round"
        return "complete"


class SnapshotController:
    """Owned by TopicReplication; tick() is called on a timer, the on_* methods by replicators."""

    def __init__(self, owner: "TopicReplication"):
        self.owner = owner
        config = owner.topic.context.config
        self.local = config.cluster_name
        self.frequency = config.replicated_subscriptions_snapshot_frequency_millis / 1000.0
        self.timeout = float(config.replicated_subscriptions_snapshot_timeout_seconds)
        self.pending: dict[str, SnapshotBuilder] = {}
        self.completed = 0
        self.timed_out = 0
        self.started = 0
        self.last_completed_start = float("-inf")
        self.last_data_written = float("-inf")  # monotonic time of the last non-marker entry
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.frequency)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the timer alive; the cause is logged
                log.exception("%s: snapshot tick failed", self.owner.topic)

    def data_written(self) -> None:
        self.last_data_written = time.monotonic()

    async def tick(self) -> bool:
        """One timer run; True when a new snapshot was started."""
        if not self.owner.has_replicated_subscriptions():
            return False
        now = time.monotonic()
        for snapshot_id, builder in list(self.pending.items()):
            if builder.started + self.timeout < now:
                log.info("%s: snapshot %s timed out (answers from %s)", self.owner.topic, snapshot_id,
                         sorted(builder.answered))
                del self.pending[snapshot_id]
                self.timed_out += 1
        if self.pending and not self.completed:
            return False
        if self.last_data_written <= self.last_completed_start:
            return False
        if not all(r.connected for r in self.owner.replicators.values()):
            return False
        remotes = sorted(self.owner.replicators)
        if not remotes:
            return False
        builder = SnapshotBuilder(str(uuid.uuid4()), remotes, now)
        self.pending[builder.snapshot_id] = builder
        self.started += 1
        log.debug("%s: starting snapshot %s with %s", self.owner.topic, builder.snapshot_id, remotes)
        await self._write_request(builder)
        return True

    async def _write_request(self, builder: SnapshotBuilder) -> None:
        request = pm.ReplicatedSubscriptionsSnapshotRequest(snapshot_id=builder.snapshot_id, source_cluster=self.local)
        await self.owner.write_marker(mk.SNAPSHOT_REQUEST, request)

    # ---- markers arriving through a replicator ---------------------------------------------
    async def on_request(self, request: pm.ReplicatedSubscriptionsSnapshotRequest, position: Position) -> None:
        """A remote cluster asks for our position: answer with where its request is stored here."""
        response = pm.ReplicatedSubscriptionsSnapshotResponse(snapshot_id=request.snapshot_id)
        response.cluster.cluster = self.local
        mk.set_position(response.cluster.message_id, position)
        await self.owner.write_marker(mk.SNAPSHOT_RESPONSE, response, replicate_to=[request.source_cluster])

    async def on_response(self, response: pm.ReplicatedSubscriptionsSnapshotResponse, local_position: Position) -> None:
        """A remote cluster answered one of our requests; local_position: where the answer is stored here."""
        builder = self.pending.get(response.snapshot_id)
        if builder is None:
            return  # timed out, or from before a restart
        outcome = builder.on_response(response.cluster.cluster, mk.position_of(response.cluster.message_id))
        if outcome == "next-round":
            await self._write_request(builder)
        elif outcome == "complete":
            del self.pending[builder.snapshot_id]
            snapshot = pm.ReplicatedSubscriptionsSnapshot(snapshot_id=builder.snapshot_id)
            mk.set_position(snapshot.local_message_id, local_position)
            for cluster, position in sorted(builder.positions.items()):
                item = snapshot.clusters.add(cluster=cluster)
                mk.set_position(item.message_id, position)
            await self.owner.write_marker(mk.SNAPSHOT, snapshot, replicate_to=[self.local])
            self.completed += 1
            self.last_completed_start = builder.started
            log.debug("%s: snapshot %s complete at %s: %s", self.owner.topic, builder.snapshot_id,
                      local_position, dict(builder.positions))

    def stats(self) -> dict:
        return {"snapshotsStarted": self.started, "snapshotsCompleted": self.completed,
                "snapshotsTimedOut": self.timed_out, "snapshotsPending": len(self.pending)}
