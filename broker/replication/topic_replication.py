"""Everything replication adds to one topic, behind the few hooks PersistentTopic, Subscription and
the SUBSCRIBE / GET_LAST_MESSAGE_ID handlers call:

* one Replicator per remote cluster of the topic's namespace (started when the topic loads,
  stopped when it closes);
* the SnapshotController (PIP-33) and the markers it writes (write_marker);
* the replicated flag of subscriptions — the cursor long property ``pulsar.replicated.subscription``
  = 1 — and their SnapshotCaches;
* applying UPDATE markers (cumulative ack, creating the subscription when missing).

A topic of a namespace that does not replicate gets an inert TopicReplication: every hook returns
at once. Source: Pulsar PersistentTopic (replicators, checkReplicatedSubscriptionControllerState),
PersistentSubscription (REPLICATED_SUBSCRIPTION_PROPERTY).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minipulsar.broker.background import BackgroundTasks
from minipulsar.broker.entry_info import EntryInfo
from minipulsar.broker.replication import markers as mk
from minipulsar.broker.replication.replicator import Replicator
from minipulsar.broker.replication.snapshot_cache import SnapshotCache
from minipulsar.broker.replication.snapshot_controller import SnapshotController
from minipulsar.broker.specs import SubscriptionSpec
from minipulsar.proto.errors import FrameError
from minipulsar.storage import Entry, Position

if TYPE_CHECKING:
    from minipulsar.broker.subscription import Subscription
    from minipulsar.broker.topic import PersistentTopic

log = logging.getLogger(__name__)

REPLICATED_SUBSCRIPTION_PROPERTY = "pulsar.replicated.subscription"


def is_replicated(subscription: "Subscription") -> bool:
    """Whether the subscription's cursor carries pulsar.replicated.subscription = 1."""
    return subscription.durable and subscription.cursor.properties.get(REPLICATED_SUBSCRIPTION_PROPERTY) == 1


def set_replicated(subscription: "Subscription", enabled: bool) -> None:
    """Set or clear the long property; it travels with every later mark-delete and is persisted."""
    if not subscription.durable or is_replicated(subscription) == enabled:
        return
    properties = subscription.cursor.properties
    if enabled:
        properties[REPLICATED_SUBSCRIPTION_PROPERTY] = 1
    else:
        properties.pop(REPLICATED_SUBSCRIPTION_PROPERTY, None)
    subscription.cursor.mark_delete(subscription.cursor.mark_delete_position, properties)
    log.info("%s: replicated = %s", subscription, enabled)


class TopicReplication:
    """topic: the PersistentTopic. Construct from the topic's __init__ (inside the event loop)."""

    # Slots: on_appended runs per SEND of a topic while its snapshot controller runs.
    __slots__ = ("topic", "clients", "config", "remotes", "replicators", "controller", "caches", "_tasks",
                 "_closed", "_updating")

    def __init__(self, topic: "PersistentTopic"):
        self.topic = topic
        self.clients = topic.context.replication
        self.config = topic.context.config
        self.remotes = self.clients.remotes_for(topic.name.namespace_name)
        self.replicators: dict[str, Replicator] = {}
        self.controller: SnapshotController | None = None
        self.caches: dict[str, SnapshotCache] = {}
        self._tasks = BackgroundTasks(topic.name, log)
        self._closed = False
        self._updating = asyncio.Lock()
        if self.remotes:
            self._tasks.spawn(self.update())

    @property
    def active(self) -> bool:
        return bool(self.remotes) and not self._closed

    async def update(self) -> None:
        """Run a replicator for each remote the namespace replicates to now: start the new ones,
        stop the removed ones and drop their cursors (their backlog is not wanted any more), and
        run the PIP-33 snapshot controller while there is any."""
        async with self._updating:
            wanted = self.clients.remotes_for(self.topic.name.namespace_name)
            for remote in [r for r in self.replicators if r not in wanted]:
                replicator = self.replicators.pop(remote)
                self.topic.set_entry_waiter(replicator, False)
                await replicator.close()
                await self.topic.ledger.delete_cursor(replicator.cursor_name)
                log.info("%s: no longer replicating to %s", self.topic.name, remote)
            for remote in [r for r in wanted if r not in self.replicators]:
                if self._closed:
                    return
                replicator = Replicator(self, remote)
                await replicator.start()
                if self._closed:  # the topic closed meanwhile
                    await replicator.close()
                    return
                self.replicators[remote] = replicator
                self.topic.set_entry_waiter(replicator, True)  # new entries wake it from now on
                log.info("%s: replicating to %s", self.topic.name, remote)
            changed, self.remotes = wanted != self.remotes, wanted
            await self._run_controller(bool(wanted) and self.config.enable_replicated_subscriptions, changed)

    async def _run_controller(self, wanted: bool, remotes_changed: bool) -> None:
        """The snapshot controller runs while there are remotes; a new set of remotes gets a new one
        (a snapshot waits for an answer from every remote)."""
        if self.controller is not None and (remotes_changed or not wanted):
            controller, self.controller = self.controller, None
            self.topic.on_appended = None
            await controller.close()
        if wanted and self.controller is None:
            self.controller = SnapshotController(self)
            self.topic.on_appended = self.on_appended  # the topic's appends arm snapshots from now on
            self.controller.start()

    async def close(self) -> None:
        """Stop the controller and the replicators (their cursors stay, with their backlog)."""
        self._closed = True
        self.topic.on_appended = None
        for replicator in self.replicators.values():
            self.topic.set_entry_waiter(replicator, False)
        self._tasks.cancel()
        await self._tasks.wait()
        if self.controller is not None:
            await self.controller.close()
        await asyncio.gather(*(r.close() for r in self.replicators.values()), return_exceptions=True)

    # ---- hooks from the topic ----------------------------------------------------------------
    def on_appended(self, data: bytes) -> None:
        """An entry was queued for the ledger (the topic's on_appended while the controller runs):
        data (non-marker) entries arm the next snapshot."""
        if self.active and not mk.is_marker_entry(data):  # per SEND: cheapest first
            self.controller.data_written()

    async def write_marker(self, marker_type: int, message, replicate_to=()) -> Position:
        """Append a marker entry to the topic; returns its position."""
        return await self.topic.publish(mk.new_marker(marker_type, message, replicate_to))

    def has_replicated_subscriptions(self) -> bool:
        return any(is_replicated(s) for s in self.topic.subscriptions.values())

    # ---- hooks from subscriptions and the SUBSCRIBE handler ----------------------------------
    def subscribe_requested(self, subscription: "Subscription", state: bool | None) -> None:
        """SUBSCRIBE's replicate_subscription_state: None (absent) changes nothing; True marks the
        subscription replicated; False only keeps a new subscription unreplicated (an existing
        replicated one is switched off by the admin API only, as the C++ client always sends false)."""
        if state:
            set_replicated(subscription, True)

    def on_marker(self, subscription: "Subscription", entry: Entry, info: EntryInfo) -> None:
        """A dispatcher read past a marker: SNAPSHOT markers go to replicated subscriptions' caches."""
        if info.marker_type != mk.SNAPSHOT or not self.active or not is_replicated(subscription):
            return
        try:
            _, snapshot = mk.parse_marker(entry.data, info.metadata)
        except FrameError:
            log.warning("%s: unparsable snapshot marker at %s", subscription, entry.position)
            return
        cache = self.caches.get(subscription.name)
        if cache is None:
            cache = self.caches[subscription.name] = SnapshotCache(
                subscription.name, self.config.replicated_subscriptions_snapshot_max_cached_per_subscription,
                self.topic.ledger.count_entries_between)
        cache.add(mk.position_of(snapshot.local_message_id), snapshot)

    def on_mark_delete(self, subscription: "Subscription") -> None:
        """The subscription's acks may have moved its mark-delete past a cached snapshot: send UPDATE."""
        cache = self.caches.get(subscription.name)
        if cache is None or not self.active:
            return
        snapshot = cache.advanced_mark_delete(subscription.cursor.mark_delete_position)
        if snapshot is None:
            return
        update = mk.MESSAGE_TYPES[mk.UPDATE](subscription_name=subscription.name)
        update.clusters.extend(snapshot.clusters)
        log.debug("%s: mark-delete passed snapshot %s; updating %s", subscription, snapshot.snapshot_id,
                  [c.cluster for c in snapshot.clusters])
        self._tasks.spawn(self.write_marker(mk.UPDATE, update))

    # ---- markers arriving through a replicator -----------------------------------------------
    def received_marker(self, remote: str, entry: Entry, metadata) -> None:
        """A replicated-subscription marker from `remote`, read by the replicator toward it."""
        try:
            marker_type, message = mk.parse_marker(entry.data, metadata)
        except FrameError:
            log.warning("%s: unparsable marker from %s at %s", self.topic.name, remote, entry.position)
            return
        if marker_type == mk.SNAPSHOT_REQUEST:
            controller = self.controller or SnapshotController(self)  # answering needs no timer
            self._tasks.spawn(controller.on_request(message, entry.position))
        elif marker_type == mk.SNAPSHOT_RESPONSE:
            if self.controller is not None:
                self._tasks.spawn(self.controller.on_response(message, entry.position))
        elif marker_type == mk.UPDATE:
            self._tasks.spawn(self.apply_update(message))

    async def apply_update(self, update) -> None:
        """Move subscription_name to this cluster's position in the update (creating it, replicated,
        at the earliest position when missing). Positions only move forward."""
        own = [c for c in update.clusters if c.cluster == self.config.cluster_name]
        if not own:
            return
        position = mk.position_of(own[0].message_id)
        name = update.subscription_name
        subscription = self.topic.subscriptions.get(name)
        if subscription is None:
            subscription = await self.topic.subscribe(SubscriptionSpec(name, initial_position="earliest"))
            set_replicated(subscription, True)
            log.info("%s: created replicated subscription %s from an update", self.topic.name, name)
        if position <= subscription.cursor.mark_delete_position:
            return
        subscription.cursor.mark_delete(position)
        for consumer in subscription.consumers:
            consumer.remove_pending_up_to(position)
        if subscription.dispatcher is not None:
            subscription.dispatcher.on_acknowledged()
        log.debug("%s: moved to %s by a replicated-subscription update", subscription, position)

    # ---- stats -------------------------------------------------------------------------------
    def stats(self) -> dict:
        """TopicStats.replication: remote cluster -> ReplicatorStats."""
        return {remote: r.stats() for remote, r in self.replicators.items()}

