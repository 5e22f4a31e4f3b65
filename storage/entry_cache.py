"""Tail cache of recently added entries, so consumers that keep up never read the disk.

It holds a contiguous run of entries of ONE ledger (the one being appended to): a
list indexed by ``entry_id - first_entry``. Appends are O(1); when the byte budget is
exceeded the oldest half is dropped at once (amortized O(1) per entry). Roll-over
starts a new run. (Pulsar: ``EntryCacheImpl``, much simplified.)
"""
from __future__ import annotations


class EntryCache:
    """``(ledger_id, entry_id) -> bytes`` for the newest entries of the append ledger."""

    __slots__ = ("_limit", "ledger_id", "first_entry", "_datas", "_bytes")

    def __init__(self, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self.ledger_id = -1
        self.first_entry = 0
        self._datas: list[bytes] = []
        self._bytes = 0

    def add(self, ledger_id: int, entry_id: int, data: bytes) -> None:
        """Cache the entry just appended (entry ids of one ledger arrive in order)."""
        if ledger_id != self.ledger_id or entry_id != self.first_entry + len(self._datas):
            self.ledger_id, self.first_entry = ledger_id, entry_id
            self._datas, self._bytes = [], 0
        if self._limit <= 0:
            return
        self._datas.append(data)
        self._bytes += len(data)
        if self._bytes > self._limit:
            self._evict_half()

    def _evict_half(self) -> None:
        drop = max(1, len(self._datas) // 2)
        self._bytes -= sum(map(len, self._datas[:drop]))
        del self._datas[:drop]
        self.first_entry += drop

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
            self._datas, self._bytes, self.ledger_id = [], 0, -1
            return
        keep = max(0, entry_count - self.first_entry)
        self._bytes -= sum(map(len, self._datas[keep:]))
        del self._datas[keep:]
