"""Durability: the share of a group commit that ManagedLedger.append returns, settled by the
report of its group in that same turn of the loop."""
from __future__ import annotations

import asyncio
import logging

import pytest

from minipulsar.storage import Durability, PersistenceError


def test_callbacks_run_when_settled_in_the_order_added_and_a_late_one_at_once():
    durable, calls = Durability(), []
    durable.add_done_callback(lambda d: calls.append(("first", d.exception())))
    durable.add_done_callback(lambda d: calls.append(("second", d.exception())))
    assert not durable.done() and calls == []
    durable.settle()
    assert durable.done() and calls == [("first", None), ("second", None)]
    durable.add_done_callback(lambda d: calls.append(("late", d.exception())))
    assert calls[-1] == ("late", None)
    durable.settle(PersistenceError("too late"))  # settled once: a second answer changes nothing
    assert durable.exception() is None and len(calls) == 3


def test_a_failed_share_gives_its_error_to_every_reader():
    durable, error = Durability(), PersistenceError("disk gone")
    with pytest.raises(asyncio.InvalidStateError):
        durable.exception()
    durable.settle(error)
    assert durable.exception() is error and not durable.cancelled()
    with pytest.raises(PersistenceError):
        durable.result()


def test_a_callback_that_raises_is_logged_and_the_others_still_run(caplog):
    durable, calls = Durability(), []
    durable.add_done_callback(lambda d: 1 / 0)
    durable.add_done_callback(lambda d: calls.append("ran"))
    with caplog.at_level(logging.ERROR, logger="minipulsar.storage.durability"):
        durable.settle()
    assert calls == ["ran"]
    assert "ZeroDivisionError" in caplog.text


def test_a_removed_callback_does_not_run():
    durable, calls = Durability(), []

    def callback(_d):
        calls.append("removed one ran")

    durable.add_done_callback(callback)
    durable.add_done_callback(callback)
    assert durable.remove_done_callback(callback) == 2
    durable.settle()
    assert calls == []


async def test_a_cancelled_waiter_leaves_the_share_and_its_other_waiters_alone():
    durable = Durability()
    waiting = [asyncio.Event(), asyncio.Event()]
    cancelled, kept = (asyncio.ensure_future(wait(durable, started)) for started in waiting)
    for started in waiting:
        await started.wait()
    cancelled.cancel()
    await asyncio.wait([cancelled])
    durable.settle()
    assert await asyncio.wait_for(kept, 5) == "durable"
    assert cancelled.cancelled() and not durable.cancelled()


async def test_awaiting_a_failed_share_raises_its_error():
    durable = Durability()
    asyncio.get_running_loop().call_soon(durable.settle, PersistenceError("EIO"))
    with pytest.raises(PersistenceError, match="EIO"):
        await durable


async def test_an_append_is_readable_when_its_callbacks_run(make_factory):
    """The report publishes the entries first: a receipt sent from a callback never names an
    entry that a read or the last confirmed position does not show yet."""
    ml = await (await make_factory()).open("t")
    position, durable = ml.append(b"payload")
    seen = []
    durable.add_done_callback(lambda _d: seen.append((ml.last_confirmed_position, ml.number_of_entries)))
    await asyncio.wait_for(durable, 10)
    assert seen == [(position, 1)]
    assert [entry.data for entry in await ml.read_positions([position])] == [b"payload"]


async def wait(durable: Durability, started: asyncio.Event) -> str:
    started.set()  # the await below takes its place among the callbacks before the task yields
    await durable
    return "durable"
