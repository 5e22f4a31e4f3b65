"""Tail cache of recently added entries, so consumers that keep up never read the disk.

Each managed ledger has an EntryCache holding a contiguous run of entries of ONE ledger (the one
being appended to): a list indexed by ``entry_id - first_entry``. Appends are O(1). All caches of
a factory share one CacheBudget (``managedLedgerCacheSizeMB``, broker-wide as in Pulsar): when the
total passes it, the caches appended to least recently give up their oldest half first until the
total is back under EVICTION_WATERMARK of the budget, so ten thousand topics hold no more than one
budget between them. Roll-over starts a new run. (Pulsar: ``EntryCacheManager`` /
``EntryCacheImpl``, much simplified; ``managedLedgerCacheEvictionWatermark``.)
"""
from __future__ import annotations

# The share of the budget an eviction brings the total down to: Pulsar's default
# managedLedgerCacheEvictionWatermark. Each eviction sorts the caches, so it must free a good
# part of the budget, not just the entry over it.
EVICTION_WATERMARK = 0.9


class CacheBudget:
    """The byte budget the entry caches of one factory share, read from config each time (the
    setting may change while running); a budget <= 0 disables caching."""

    def __init__(self, config) -> None:
        self.config = config  # read on every append: a field lookup, no property call
        self.used = 0
        # Every cache of the factory's open ledgers. Which was appended to least recently is told
        # by their stamps (appends, below), sorted only when evicting: keeping an order on every
        # append moved a cold node of an ordered dict per entry at 1,000 topics.
        self._caches: dict[EntryCache, None] = {}
        self.appends = 0  # appends to the caches so far: the stamp of the latest

    @property
    def limit(self) -> int:
        """The budget in bytes now (<= 0: caching is off)."""
        return self.config.entry_cache_size_mb << 20

    def join(self, cache: "EntryCache") -> None:
        """cache (an open ledger's, from its first entry) shares this budget until forget(cache)."""
        self._caches[cache] = None

    def evict(self) -> None:
        """The cache appended to least recently gives up its oldest half, again until it is empty,
        then the next, until the total is within EVICTION_WATERMARK of the budget."""
        target = self.limit * EVICTION_WATERMARK
        for cache in sorted(self._caches, key=lambda cache: cache.stamp):
            while self.used > target and cache.holds_entries:
                cache.evict_half()
            if self.used <= target:
                return

    def released(self, nbytes: int) -> None:
        self.used -= nbytes

    def forget(self, cache: "EntryCache") -> None:
        """cache's ledger closed: its entries and bytes leave the budget."""
        cache.clear()
        self._caches.pop(cache, None)


class EntryCache:
    """``(ledger_id, entry_id) -> bytes`` for the newest entries of the append ledger."""

    __slots__ = ("_budget", "ledger_id", "first_entry", "_datas", "_bytes", "stamp")

    def __init__(self, budget: CacheBudget) -> None:
        self._budget = budget
        self.ledger_id = -1
        self.first_entry = 0
        self._datas: list[bytes] = []
        self._bytes = 0
        self.stamp = 0  # the budget's append count at this cache's latest append

    def add(self, ledger_id: int, entry_id: int, data: bytes) -> None:
        """Cache the entry just appended (entry ids of one ledger arrive in order)."""
        budget = self._budget
        if ledger_id != self.ledger_id or entry_id != self.first_entry + len(self._datas):
            self.clear()
            self.ledger_id, self.first_entry = ledger_id, entry_id
            # Joined here, not when made: a ledger whose open fails never appends, nor is forgotten.
            budget.join(self)
        if budget.config.entry_cache_size_mb <= 0:
            return
        self._datas.append(data)
        self._bytes += len(data)
        budget.used += len(data)
        budget.appends += 1
        self.stamp = budget.appends
        if budget.used > budget.config.entry_cache_size_mb << 20:  # the limit, inline: per entry
            budget.evict()

    @property
    def size(self) -> int:
        """Bytes of the entries held (entry data only)."""
        return self._bytes

    @property
    def holds_entries(self) -> bool:
        """Whether the run has an entry left to evict."""
        return bool(self._datas)

    def evict_half(self) -> None:
        """Drop the oldest half of the run (nothing when it is empty)."""
        if not self._datas:
            return
        drop = max(1, len(self._datas) // 2)
        dropped = sum(map(len, self._datas[:drop]))
        del self._datas[:drop]
        self._bytes -= dropped
        self._budget.released(dropped)
        self.first_entry += drop

    def clear(self) -> None:
        """Forget every entry (roll-over, or the ledger closes)."""
        self._budget.released(self._bytes)
        self.first_entry += len(self._datas)
        self._datas, self._bytes = [], 0

    def get(self, ledger_id: int, first: int, last: int) -> list[bytes] | None:
        """Entries ``first..last`` (inclusive) if all are cached, else None."""
        if ledger_id != self.ledger_id or first < self.first_entry:
            return None
        hi = last - self.first_entry + 1
        if hi > len(self._datas):
            return None
        return self._datas[first - self.first_entry: hi]

    def truncate(self, ledger_id: int, entry_count: int) -> None:
        """Forget entries ``>= entry_count`` of ``ledger_id`` (their append failed)."""
        if ledger_id != self.ledger_id:
            self.clear()
            self.ledger_id = -1
            return
        keep = max(0, entry_count - self.first_entry)
        dropped = sum(map(len, self._datas[keep:]))
        del self._datas[keep:]
        self._bytes -= dropped
        self._budget.released(dropped)
