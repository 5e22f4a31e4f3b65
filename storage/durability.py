"""Whether the appends of one ledger's share of a group commit are durable: the future that
``ManagedLedger.append`` returns, settled by the group commit in the turn of the loop that hears
the journal's report.

An asyncio future would run each done-callback a turn later, as a loop handle of its own. At
1,000 topics a group holds about as many shares as entries, so a group's report settles about as
many futures as it holds entries, and a future with a callback costs the loop about 1 µs more
than a call (uvloop, 2-core machine). Here the callbacks run when the share is settled, after
the managed ledger published its entries: a producer's receipts leave in the report's turn.
Loop thread only. Pulsar: ``OpAddEntry`` calling its ``AddEntryCallback`` (addComplete /
addFailed) once the bookies acknowledged the entry.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Generator

log = logging.getLogger(__name__)


class Durability:
    """Pending until ``settle(error)``: error None (the entries are durable) or the
    PersistenceError that failed them. Hot paths read the plain fields ``settled`` and ``error``;
    everything else reads it as an asyncio future is: ``done()``, ``cancelled()``
    (never: a caller that stops waiting cancels only its own waiter), ``exception()``,
    ``result()`` (both raise asyncio.InvalidStateError while pending), ``add_done_callback(fn)``,
    ``remove_done_callback(fn)`` (returns how many it removed) and ``await``. ``fn(self)`` runs
    when settled, in the order added; one added after that runs at once; one that raises is
    logged and the others still run.
    The group commit's AppendOp is one (storage.journal): a share is one object, not two."""

    # _callbacks: None, the one callback (a share usually has one: its producer's), or a list of
    # them. No list for one: at 1,000 topics every report frees a share per entry, and each
    # object the collector tracks costs a cache miss or two when it is freed cold.
    __slots__ = ("settled", "error", "_callbacks")

    def __init__(self) -> None:
        self.settled = False
        self.error: BaseException | None = None
        self._callbacks: Callable[["Durability"], None] | list | None = None

    def done(self) -> bool:
        return self.settled

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        if not self.settled:
            raise asyncio.InvalidStateError("the appends are not durable yet")
        return self.error

    def result(self) -> None:
        if self.exception() is not None:
            raise self.error

    def add_done_callback(self, fn: Callable[["Durability"], None]) -> None:
        callbacks = self._callbacks
        if self.settled:
            self._call(fn)
        elif callbacks is None:
            self._callbacks = fn
        elif type(callbacks) is list:
            callbacks.append(fn)
        else:
            self._callbacks = [callbacks, fn]

    def remove_done_callback(self, fn: Callable[["Durability"], None]) -> int:
        callbacks = self._listed()
        kept = [cb for cb in callbacks if cb != fn]
        self._callbacks = kept or None
        return len(callbacks) - len(kept)

    def settle(self, error: BaseException | None = None) -> None:
        """The group commit's answer (once; later calls are ignored)."""
        if self.settled:
            return
        self.settled, self.error = True, error
        callbacks, self._callbacks = self._callbacks, None
        if callbacks is None:
            return
        if type(callbacks) is list:
            for fn in callbacks:
                self._call(fn)
            return
        try:  # the one callback: _call inlined, a call per share is what this class saves
            callbacks(self)
        except Exception:
            log.exception("a callback of a durable append failed")

    def _listed(self) -> list:
        callbacks = self._callbacks
        return [] if callbacks is None else callbacks if type(callbacks) is list else [callbacks]

    def _call(self, fn: Callable[["Durability"], None]) -> None:
        try:
            fn(self)
        except Exception:
            log.exception("a callback of a durable append failed")

    def __await__(self) -> Generator:
        if not self.settled:
            waiter = asyncio.get_running_loop().create_future()
            self.add_done_callback(lambda _: waiter.done() or waiter.set_result(None))
            yield from waiter.__await__()
        return self.result()
