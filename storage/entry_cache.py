"""Tail cache of recently added entries, so consumers that keep up never read the disk.

Each managed ledger has an EntryCache holding a contiguous run of entries of ONE ledger (the one
being appended to): a list indexed by ``entry_id - first_entry``. Appends are O(1). All caches of
a factory share one CacheBudget (``managedLedgerCacheSizeMB``, broker-wide as in Pulsar): when the
total passes it, the caches appended to least recently give up their oldest half first (amortized
O(1) per entry), so ten thousand topics hold no more than one budget between them. Roll-over
starts a new run. (Pulsar: ``EntryCacheManager`` / ``EntryCacheImpl``, much simplified.)
"""
from __future__ import annotations

from collections import OrderedDict


class CacheBudget:
    """The byte budget the entry caches of one factory share, read from config each time (the
    setting may change while running); a budget <= 0 disables caching."""

    def __init__(self, config) -> None:
        self.config = config  # read on every append: a field lookup, no property call
        self.used = 0
        self._recent: OrderedDict[EntryCache, None] = OrderedDict()  # least recently appended first
        # The cache appended to last, already at the end of _recent: a run of appends to one ledger
        # moves nothing (with one topic, the move cost a third of an append's time in the cache).
        self._newest: EntryCache | None = None

    @property
    def limit(self) -> int:
        """The budget in bytes now (<= 0: caching is off)."""
        return self.config.entry_cache_size_mb << 20

    def added(self, cache: "EntryCache", nbytes: int) -> None:
        self.used += nbytes
        if cache is not self._newest:
            self._recent[cache] = None
            self._recent.move_to_end(cache)
            self._newest = cache
        if self.used > self.config.entry_cache_size_mb << 20:
            self._evict()

    def _evict(self) -> None:
        """The caches appended to least recently give up their oldest half until the budget holds."""
        limit = self.limit
        while self.used > limit and self._recent:
            oldest = next(iter(self._recent))
            if not oldest.evict_half():
                self._drop(oldest)  # empty: nothing more to take from it

    def released(self, nbytes: int) -> None:
        self.used -= nbytes

    def forget(self, cache: "EntryCache") -> None:
        """cache's ledger closed: its entries and bytes leave the budget."""
        cache.clear()
        self._drop(cache)

    def _drop(self, cache: "EntryCache") -> None:
        self._recent.pop(cache, None)
        if cache is self._newest:
            self._newest = None  # its next append puts it back at the end


class EntryCache:
    """``(ledger_id, entry_id) -> bytes`` for the newest entries of the append ledger."""

    __slots__ = ("_budget", "ledger_id", "first_entry", "_datas", "_bytes")

    def __init__(self, budget: CacheBudget) -> None:
        self._budget = budget
        self.ledger_id = -1
        self.first_entry = 0
        self._datas: list[bytes] = []
        self._bytes = 0

    def add(self, ledger_id: int, entry_id: int, data: bytes) -> None:
        """Cache the entry just appended (entry ids of one ledger arrive in order)."""
        if ledger_id != self.ledger_id or entry_id != self.first_entry + len(self._datas):
            self.clear()
            self.ledger_id, self.first_entry = ledger_id, entry_id
        if self._budget.config.entry_cache_size_mb <= 0:
            return
        self._datas.append(data)
        self._bytes += len(data)
        self._budget.added(self, len(data))

    def evict_half(self) -> bool:
        """Drop the oldest half of the run; False when the run was already empty."""
        if not self._datas:
            return False
        drop = max(1, len(self._datas) // 2)
        dropped = sum(map(len, self._datas[:drop]))
        del self._datas[:drop]
        self._bytes -= dropped
        self._budget.released(dropped)
        self.first_entry += drop
        return True

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
