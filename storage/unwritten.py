"""Durable entries not yet in their segment: what memory alone holds of a managed ledger between
its group's report and the ledger storage's round behind the journal (up to WRITE_BEHIND_SECONDS).

Per ledger id, the entries from the first one not yet written, in one list. A report appends to
that list and the ledger storage's progress deletes from its front; neither makes an object the
cyclic garbage collector tracks. At 1,000 topics x 10 msg/s every report holds one entry: kept as
a tuple per report, about ten thousand were young at a time (and as many of the ledger storage's
runs), and a young collection that met them took 3-9 ms every second or two. Loop thread only.
Pulsar keeps such entries in the bookie's write cache (BookKeeper SingleDirectoryDbLedgerStorage)
until they are flushed behind the journal.
"""
from __future__ import annotations


class UnwrittenEntries:
    """ledger id -> the entries of that ledger not yet in its segment, consecutive from ``first``.
    Sizes are entry bytes (len of the data), as the factory's unwrittenBytes counts them."""

    __slots__ = ("_first", "_entries", "_tail_id", "_tail")

    def __init__(self) -> None:
        self._first: dict[int, int] = {}  # ledger id -> entry id of the list's first entry
        self._entries: dict[int, list[bytes]] = {}
        # The list added to last and its ledger id (None: none): with 1,000 topics every report
        # adds to one ledger's list, and the dicts' lookups would touch two more cold objects.
        self._tail_id: int | None = None
        self._tail: list[bytes] | None = None

    def add(self, ledger_id: int, first_entry: int, datas: list[bytes]) -> None:
        """Entries first_entry.. of ledger_id became durable; they follow the ledger's last ones."""
        if ledger_id == self._tail_id:
            self._tail += datas
            return
        entries = self._entries.get(ledger_id)
        if entries is None:
            self._first[ledger_id] = first_entry
            self._entries[ledger_id] = entries = []
        entries += datas
        self._tail_id, self._tail = ledger_id, entries

    def release(self, ledger_id: int, written: int, limit: int) -> tuple[int, int]:
        """The ledger storage wrote the first ``written`` entries of ledger_id (and all of every
        ledger before it): lets go of at most ``limit`` entries, oldest ledger first. Returns
        (entries, bytes) let go."""
        released = freed = 0
        for lid in list(self._entries):
            if lid > ledger_id or released >= limit:
                break
            entries, first = self._entries[lid], self._first[lid]
            reach = len(entries) if lid < ledger_id else written - first
            count = min(reach, len(entries), limit - released)
            if count <= 0:
                break
            freed += sum(map(len, entries[:count]))
            del entries[:count]
            released += count
            if entries:
                self._first[lid] = first + count
            else:
                self._drop(lid)
        return released, freed

    def read(self, ledger_id: int, first: int, last: int) -> list[bytes] | None:
        """Entries first..last of ledger_id when memory holds them all, else None."""
        entries = self._entries.get(ledger_id)
        if entries is None:
            return None
        start = first - self._first[ledger_id]
        if start < 0 or last - first + start >= len(entries):
            return None
        return entries[start:start + last - first + 1]

    def first(self, ledger_id: int) -> int | None:
        """The first entry of ledger_id only memory holds (None when its segment has them all)."""
        return self._first.get(ledger_id)

    def forget(self, ledger_id: int) -> int:
        """Drop ledger_id's entries (it was trimmed); returns the bytes let go."""
        freed = sum(map(len, self._entries.get(ledger_id, ())))
        self._drop(ledger_id)
        return freed

    def _drop(self, ledger_id: int) -> None:
        self._first.pop(ledger_id, None)
        self._entries.pop(ledger_id, None)
        if ledger_id == self._tail_id:  # the next add to it starts a new list, in the dicts
            self._tail_id = self._tail = None

    def clear(self) -> int:
        """Drop everything (the ledger storage wrote it all); returns the bytes let go."""
        freed = sum(sum(map(len, entries)) for entries in self._entries.values())
        self._entries.clear()
        self._first.clear()
        self._tail_id = self._tail = None
        return freed

    def __len__(self) -> int:
        """Entries held, all ledgers together."""
        return sum(map(len, self._entries.values()))
