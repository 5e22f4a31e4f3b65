"""Workloads: short storage sessions written against the public API only.

Each workload is a :class:`Workload` subclass registered with :func:`workload`. ``setup`` (untraced,
optional) leaves the durable state the traced ``run`` starts from: a workload that is not about
the first boot starts from a data dir that already exists, so it tests its own feature only.

Workloads go through :class:`Ctx`, which performs each operation with the public API
(``ManagedLedgerFactory``, ``ManagedLedger``, ``ManagedCursor``, ``MetadataStore``) and writes
what the caller was promised to the acknowledgement file, one line per fact, each with a single
``os.write``:

* ``INTENT <id> <json>`` before an operation starts (what *may* be on disk from then on), and
* ``ACK <id> <json>`` once it returned (what *must* be on disk from then on).

The checker (checker.py) derives every invariant from these facts, so a new workload needs no
checker change as long as it uses the Ctx methods. Nothing here looks at files: when the storage
internals change (a shared journal instead of per-ledger writer threads), the workloads still run
and the explorer still sees whatever files the new code writes.

Entry payloads must be unique within a workload (the checker maps bytes back to the append).
"""
from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field

REGISTRY: dict[str, type["Workload"]] = {}

DATA = "data"  # the data dir, relative to the workload's root


def workload(cls: type["Workload"]) -> type["Workload"]:
    """Class decorator: register a workload under ``cls.name``."""
    REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> "Workload":
    try:
        return REGISTRY[name]()
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def _pos(p) -> list[int]:
    return [int(p.ledger_id), int(p.entry_id)]


class Ctx:
    """Runs operations and writes their facts. ``root``: the workload's root folder (its data dir
    is ``root/data``); ``ack_path``: the acknowledgement file (outside the root)."""

    def __init__(self, wl: "Workload", root: str, ack_path: str, first_id: int = 1):
        self.wl = wl
        self.root = root
        self.data_dir = os.path.join(root, DATA)
        self._fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._next = first_id
        self._cursor_ledger: dict[int, str] = {}

    def close(self) -> None:
        os.close(self._fd)

    def fact(self, tag: str, kind: str, **fields) -> int:
        fid = self._next
        self._next += 1
        os.write(self._fd, f"{tag} {fid} {json.dumps({'kind': kind, **fields}, sort_keys=True)}\n".encode())
        return fid

    # -- storage ---------------------------------------------------------------------
    def config(self):
        from minipulsar.storage import ManagedLedgerConfig
        return ManagedLedgerConfig(**self.wl.config)

    async def start_factory(self):
        """A started ManagedLedgerFactory on the data dir, with the workload's config."""
        from minipulsar.storage import ManagedLedgerFactory
        factory = ManagedLedgerFactory(self.data_dir, self.config())
        await factory.start()
        return factory

    async def open_ledger(self, factory, name: str):
        """factory.open(name): from its return on, the ledger exists."""
        self.fact("INTENT", "open", ledger=name)
        ml = await factory.open(name)
        self.fact("ACK", "open", ledger=name)
        return ml

    async def add(self, ml, data: bytes):
        """ml.add_entry(data): from its return on, the entry is at its position with its bytes."""
        self.fact("INTENT", "add", ledger=ml.name, data=data.hex())
        pos = await ml.add_entry(data)
        self.fact("ACK", "add", ledger=ml.name, pos=_pos(pos), data=data.hex())
        return pos

    async def open_cursor(self, ml, name: str, initial: str = "earliest"):
        """ml.open_cursor: a new durable cursor is persisted before it returns."""
        self.fact("INTENT", "cursor_open", ledger=ml.name, cursor=name)
        cur = await ml.open_cursor(name, initial)
        self._cursor_ledger[id(cur)] = ml.name
        self.fact("ACK", "cursor_open", ledger=ml.name, cursor=name, md=_pos(cur.persisted_mark_delete_position),
                  ranges=[[*_pos(lo), *_pos(up)] for lo, up in cur.individually_deleted_ranges()])
        return cur

    def cursor(self, ml, name: str):
        """An existing durable cursor of an opened ledger (loaded from disk at open)."""
        cur = ml.cursors[name]
        self._cursor_ledger[id(cur)] = ml.name
        return cur

    def consume(self, cur, md=None, positions=()) -> None:
        """Acknowledge to the cursor (in memory; persisted later): a cumulative ack up to ``md``
        and/or individual acks of ``positions``. Recorded as an INTENT: the cursor may persist it."""
        ledger = self._cursor_ledger[id(cur)]
        self.fact("INTENT", "consume", ledger=ledger, cursor=cur.name,
                  md=_pos(md) if md is not None else None, positions=[_pos(p) for p in positions])
        if md is not None:
            cur.mark_delete(md)
        if positions:
            cur.delete(list(positions))

    async def persist(self, cur) -> None:
        """cursor.flush(): from its return on, every ack made before it is durable (the persisted
        mark-delete, and the ranges the cursor held when flush was called)."""
        ranges = [[*_pos(lo), *_pos(up)] for lo, up in cur.individually_deleted_ranges()]
        await cur.flush()
        self.fact("ACK", "persisted", ledger=self._cursor_ledger[id(cur)], cursor=cur.name,
                  md=_pos(cur.persisted_mark_delete_position), ranges=ranges)

    async def delete_cursor(self, ml, name: str) -> None:
        self.fact("INTENT", "cursor_delete", ledger=ml.name, cursor=name)
        await ml.delete_cursor(name)
        self.fact("ACK", "cursor_delete", ledger=ml.name, cursor=name)

    async def delete_ledger(self, factory, name: str) -> None:
        """factory.delete(name): from its return on, the ledger and its entries are gone."""
        self.fact("INTENT", "delete", ledger=name)
        await factory.delete(name)
        self.fact("ACK", "delete", ledger=name)

    # -- broker metadata -----------------------------------------------------------
    def metadata(self, rel: str):
        """A loaded broker MetadataStore on ``data/<rel>`` (e.g. metadata/partitioned-topics.json)."""
        from minipulsar.broker.metadata_store import MetadataStore
        store = MetadataStore(os.path.join(self.data_dir, rel))
        store.rel = rel
        store.load()
        return store

    async def save_metadata(self, store) -> None:
        """store.save(): from its return on, this content (or a later one) is on disk."""
        snapshot = json.loads(json.dumps(store.data))
        self.fact("INTENT", "meta", path=store.rel, data=snapshot)
        await store.save()
        self.fact("ACK", "meta", path=store.rel, data=snapshot)


@dataclass
class Workload:
    """Base class. ``config``: ManagedLedgerConfig keyword arguments for both phases."""

    name: str = ""
    description: str = ""
    config: dict = field(default_factory=dict)

    async def setup(self, ctx: Ctx) -> None:
        """Untraced; leaves the durable state ``run`` starts from (default: nothing, no data dir)."""

    async def run(self, ctx: Ctx) -> None:
        raise NotImplementedError


TOPIC = "persistent://public/default/crash-states"


def _payload(tag: str, i: int) -> bytes:
    return f"{tag}-entry-{i:03d}|".encode() + bytes([i % 251]) * (i % 7)


async def _boot_metadata(ctx: Ctx) -> None:
    """What Broker.start does to the metadata store on a boot (broker/broker.py start()):
    load it, bump brokerInstance, create the standalone tenants/namespaces, save."""
    store = ctx.metadata("metadata/partitioned-topics.json")
    store.data["brokerInstance"] = store.data.get("brokerInstance", -1) + 1
    for ns in ("public/default", "pulsar/system"):
        store.data.setdefault("tenants", {}).setdefault(ns.split("/")[0], {"adminRoles": [], "allowedClusters": ["standalone"]})
        store.data.setdefault("namespaces", {}).setdefault(ns, {})
    await ctx.save_metadata(store)


@workload
@dataclass
class FirstBoot(Workload):
    name: str = "w1"
    description: str = ("first start on an empty data dir (as Broker.start: factory, then the metadata "
                        "store), create a topic with a subscription, append entries")
    config: dict = field(default_factory=lambda: {"mark_delete_rate_limit": 0})

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        await _boot_metadata(ctx)
        ml = await ctx.open_ledger(factory, TOPIC)
        await ctx.open_cursor(ml, "sub", "earliest")
        for i in range(6):
            await ctx.add(ml, _payload("w1", i))
        await factory.close()


@workload
@dataclass
class RollOverAndTrim(Workload):
    name: str = "w2"
    description: str = ("appends across ledger roll-overs (5 entries per ledger), then a consumer "
                        "acknowledges two ledgers' worth and the consumed ledgers are trimmed")
    config: dict = field(default_factory=lambda: {"max_entries_per_ledger": 5, "mark_delete_rate_limit": 0})

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        await ctx.open_cursor(ml, "sub", "earliest")
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        cur = ctx.cursor(ml, "sub")
        positions = [await ctx.add(ml, _payload("w2", i)) for i in range(12)]
        ctx.consume(cur, md=positions[9])  # ledgers holding entries 0-4 and 5-9 become consumable
        await ctx.persist(cur)
        for i in range(12, 15):
            await ctx.add(ml, _payload("w2", i))
        await factory.close()


@workload
@dataclass
class CursorPersists(Workload):
    name: str = "w3"
    description: str = ("cursor persists: individual acks (ranges), the mark-delete moving over them, "
                        "a cumulative ack, a second subscription; each persist acknowledged by flush()")
    config: dict = field(default_factory=lambda: {"max_entries_per_ledger": 8, "mark_delete_rate_limit": 0})

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        await ctx.open_cursor(ml, "sub", "earliest")
        for i in range(12):
            await ctx.add(ml, _payload("w3", i))
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        from minipulsar.storage import Position
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        cur = ctx.cursor(ml, "sub")
        first = ml.first_position
        entries = [ml.advance(Position(first.ledger_id, first.entry_id - 1), i + 1) for i in range(12)]
        p = entries.__getitem__  # the i-th entry (fixed now: trimming moves what advance() counts from)
        ctx.consume(cur, positions=[p(1), p(3), p(4)])
        await ctx.persist(cur)
        ctx.consume(cur, positions=[p(0)])  # mark-delete moves over 0..1
        await ctx.persist(cur)
        ctx.consume(cur, positions=[p(6), p(9)])
        await ctx.persist(cur)
        ctx.consume(cur, md=p(7))  # cumulative: 0..7, range (8,9] stays
        await ctx.persist(cur)
        other = await ctx.open_cursor(ml, "sub2", "earliest")
        ctx.consume(other, positions=[p(2)])
        await ctx.persist(other)
        ctx.consume(cur, positions=[p(8)])
        await ctx.persist(cur)
        await factory.close()


@workload
@dataclass
class MetadataWrites(Workload):
    name: str = "w4"
    description: str = ("broker metadata saves on an existing data dir: a namespace policy, "
                        "partitioned-topic metadata, an update and a removal, and a second store (schemas)")

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()  # the data dir of an earlier boot
        await _boot_metadata(ctx)
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        store = ctx.metadata("metadata/partitioned-topics.json")
        store.data["brokerInstance"] += 1
        await ctx.save_metadata(store)
        store.data["namespaces"]["public/default"]["message_ttl_in_seconds"] = 60  # set-message-ttl
        await ctx.save_metadata(store)
        store.data.setdefault("partitioned", {})["persistent://public/default/orders"] = 3
        await ctx.save_metadata(store)
        store.data["partitioned"]["persistent://public/default/orders"] = 5  # update-partitioned-topic
        store.data["partitioned"]["persistent://public/default/audit"] = 2
        await ctx.save_metadata(store)
        del store.data["partitioned"]["persistent://public/default/audit"]  # delete-partitioned-topic
        await ctx.save_metadata(store)
        schemas = ctx.metadata("metadata/schemas.json")  # a second store in the same folder, first save
        schemas.data["public/default/orders"] = [{"type": "STRING", "version": 0}]
        await ctx.save_metadata(schemas)
        await factory.close()


@workload
@dataclass
class DeleteAndRecreate(Workload):
    name: str = "w5"
    description: str = ("delete a topic (entries and a subscription) and create it again under the "
                        "same name, then append to the new one")
    config: dict = field(default_factory=lambda: {"max_entries_per_ledger": 4, "mark_delete_rate_limit": 0})

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        cur = await ctx.open_cursor(ml, "sub", "earliest")
        positions = [await ctx.add(ml, _payload("w5-old", i)) for i in range(6)]
        ctx.consume(cur, positions=[positions[1]])
        await ctx.persist(cur)
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        await ctx.delete_ledger(factory, TOPIC)  # not opened first: the broker deletes what it has not loaded too
        ml = await ctx.open_ledger(factory, TOPIC)
        await ctx.open_cursor(ml, "sub", "earliest")
        for i in range(3):
            await ctx.add(ml, _payload("w5-new", i))
        await factory.close()


@workload
@dataclass
class DeleteSubscription(Workload):
    name: str = "w6"
    description: str = ("(beyond the brief's five) delete one of two subscriptions; the other has consumed "
                        "everything, so the deletion lets the consumed ledgers be trimmed; then append more")
    config: dict = field(default_factory=lambda: {"max_entries_per_ledger": 4, "mark_delete_rate_limit": 0})

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        keep = await ctx.open_cursor(ml, "keep", "earliest")
        await ctx.open_cursor(ml, "drop", "earliest")
        positions = [await ctx.add(ml, _payload("w6", i)) for i in range(10)]
        ctx.consume(keep, md=positions[-1])
        await ctx.persist(keep)
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ml = await ctx.open_ledger(factory, TOPIC)
        await ctx.delete_cursor(ml, "drop")
        for i in range(10, 13):
            await ctx.add(ml, _payload("w6", i))
        await factory.close()


@workload
@dataclass
class SharedJournal(Workload):
    name: str = "w7"
    description: str = ("two ledgers appending through the one shared journal, interleaved; a "
                        "checkpoint between rounds (segments synced, older journal files removed) and "
                        "journal files rotated at a tiny size, so a crash falls before, during and after each")
    config: dict = field(default_factory=lambda: {"journal_max_size_mb": 1, "mark_delete_rate_limit": 0})

    async def setup(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        for n in range(2):
            await ctx.open_cursor(await ctx.open_ledger(factory, f"{TOPIC}-{n}"), "sub", "earliest")
        await factory.close()

    async def run(self, ctx: Ctx) -> None:
        factory = await ctx.start_factory()
        ledgers = [await ctx.open_ledger(factory, f"{TOPIC}-{n}") for n in range(2)]
        for round_ in range(3):
            for i, ml in enumerate(ledgers):
                await ctx.add(ml, _payload(f"w7-{round_}-{i}", round_) + b"J" * 300_000)  # a new file in round 2
            await factory.checkpoint()
        for i, ml in enumerate(ledgers):
            await ctx.add(ml, _payload(f"w7-tail-{i}", i))
        await factory.close()


def run_phase(name: str, phase: str, root: str, ack_path: str) -> None:
    """Run ``phase`` ("setup" or "run") of workload ``name`` in this process."""
    wl = get(name)
    ctx = Ctx(wl, root, ack_path, first_id=1 if phase == "setup" else 1001)  # ids stay unique across phases
    try:
        asyncio.run(getattr(wl, phase)(ctx))
    finally:
        ctx.close()
