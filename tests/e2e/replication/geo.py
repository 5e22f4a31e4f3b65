"""Helpers for multi-cluster tests: N broker processes on loopback, each its own cluster and data
dir, replicating namespace public/default to every peer; and reading a stopped broker's ledger to
see which markers it stored."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pulsar

from minipulsar.broker.entry_info import entry_info
from minipulsar.broker.topic_name import TopicName
from minipulsar.storage import ManagedLedgerConfig, ManagedLedgerFactory
from minipulsar.launcher import free_port

NAMES = ("a", "b", "c")


def start_clusters(broker_process, tmp_path: Path, count: int, snapshot_millis: int = 1000, **extra_env):
    """count broker processes a, b, c...; returns {name: BrokerProcess} (minipulsar.launcher). extra_env:
    MINIPULSAR_ keys."""
    names = NAMES[:count]
    ports = {name: free_port() for name in names}
    peers = ",".join(f"{n}=pulsar://127.0.0.1:{ports[n]}" for n in names)
    procs = {}
    for name in names:
        procs[name] = broker_process(data_dir=tmp_path / name, port=ports[name],
                                     args=("--cluster-name", name), env=cluster_env(peers, snapshot_millis, **extra_env))
    return procs


def cluster_env(peers: str, snapshot_millis: int, **extra) -> dict[str, str]:
    env = {
        "MINIPULSAR_replicationClusters": peers,
        "MINIPULSAR_namespaceReplicationClusters": "public/default=*",
        "MINIPULSAR_replicatedSubscriptionsSnapshotFrequencyMillis": str(snapshot_millis),
        "MINIPULSAR_journalSyncData": "false",  # loopback tests on a shared machine: page cache is enough
    }
    env.update({f"MINIPULSAR_{k}": str(v) for k, v in extra.items()})
    return env


def restart(proc):
    """Start a stopped broker again on the same ports and data dir with the same settings."""
    return proc.restart()


def client(proc) -> pulsar.Client:
    return pulsar.Client(proc.url, operation_timeout_seconds=20)


def receive_all(consumer, idle_ms: int = 3000, limit: int = 100_000, ack: bool = True) -> list:
    """Messages until none arrives for idle_ms."""
    out = []
    while len(out) < limit:
        try:
            msg = consumer.receive(idle_ms)
        except pulsar.Timeout:
            break
        out.append(msg)
        if ack:
            consumer.acknowledge(msg)
    return out


def pending(c: pulsar.Client, topic: str, subscription: str, idle_ms: int = 1000, **subscribe_kwargs) -> int:
    """How many messages `subscription` would deliver now: a consumer receives them without
    acknowledging (so the cursor does not move) until none arrives for idle_ms, then closes. Marker
    entries never reach consumers, so unlike msgBacklog this counts messages only."""
    consumer = c.subscribe(topic, subscription, **subscribe_kwargs)
    try:
        return len(receive_all(consumer, idle_ms=idle_ms, ack=False))
    finally:
        consumer.close()


def replicated_everything(c: pulsar.Client, topic: str, count: int) -> None:
    """Wait until `count` messages of topic are readable in the cluster c is connected to (a
    non-durable reader from the earliest; it leaves no subscription behind)."""
    reader = c.create_reader(topic, pulsar.MessageId.earliest)
    try:
        for _ in range(count):
            reader.read_next(30_000)
    finally:
        reader.close()


def stored_markers(data_dir: Path, topic: str) -> list[tuple[tuple[int, int], int, str]]:
    """(position, marker_type, replicated_from) of every marker entry stored for topic by a
    *stopped* broker whose data dir is data_dir (read with our storage, not through the broker)."""
    async def read():
        # retention: opening must not trim what the test wants to inspect
        factory = ManagedLedgerFactory(data_dir / "ledgers", ManagedLedgerConfig(retention_time_minutes=-1, retention_size_mb=-1))
        await factory.start()
        try:
            name = TopicName.parse(topic).storage_name
            if not factory.exists(name):
                return []
            ledger = await factory.open(name)
            found = []
            position = ledger.first_position
            while position is not None and position <= ledger.last_confirmed_position:
                entries = await ledger.read_entries(position, 1000)
                if not entries:
                    break
                for entry in entries:
                    info = entry_info(entry.data)
                    if info.marker_type is not None:
                        found.append((tuple(entry.position), info.marker_type, info.metadata.replicated_from))
                position = ledger.next_valid_position(entries[-1].position)
            return found
        finally:
            await factory.close()
    return asyncio.run(read())
