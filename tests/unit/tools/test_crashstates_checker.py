"""The invariants (checker.verify) on hand-made observations: what counts as a violation."""
from __future__ import annotations

from tools.crashstates.checker import FactIndex, verify
from tools.crashstates.recorder import Fact

L = "t"


_ids = iter(range(1, 1 << 30))


def fact(tag, kind, at, **f):
    """A fact written after ``at`` ops (-1: in the setup phase)."""
    return Fact(tag, next(_ids), kind, f, at)


def add(pos, data, at):
    return [fact("INTENT", "add", at, ledger=L, data=data), fact("ACK", "add", at, ledger=L, pos=list(pos), data=data)]


def facts_basic():
    return [fact("INTENT", "open", -1, ledger=L), fact("ACK", "open", -1, ledger=L),
            fact("INTENT", "cursor_open", -1, ledger=L, cursor="s"),
            fact("ACK", "cursor_open", -1, ledger=L, cursor="s", md=[0, -1], ranges=[]),
            *add((0, 0), "aa", 1), *add((0, 1), "bb", 2),
            fact("INTENT", "consume", 3, ledger=L, cursor="s", md=[0, 0], positions=[]),
            fact("ACK", "persisted", 4, ledger=L, cursor="s", md=[0, 0], ranges=[])]


def obs(entries, md=(0, 0), ranges=(), lac=None, **extra):
    led = {"entries": [[l, e, d] for (l, e), d in entries], "cursors": {"s": {"md": list(md), "ranges": list(ranges)}},
           "lac": list(lac or (entries[-1][0] if entries else (0, -1)))}
    return {"ledgers": {L: led}, "missing": [], "probe": {}, "metadata": {}, "errors": [], **extra}


def cats(o, facts, seen=None):
    index = FactIndex(facts)
    return sorted({v.category for v in verify(o, index, len(facts) if seen is None else seen)})


def test_everything_there_is_fine():
    assert cats(obs([((0, 0), "aa"), ((0, 1), "bb")]), facts_basic()) == []


def test_a_lost_acknowledged_entry_is_a_violation_unless_every_cursor_consumed_it():
    assert cats(obs([((0, 0), "aa")]), facts_basic()) == ["entry-lost"]
    assert cats(obs([((0, 1), "bb")]), facts_basic()) == []  # 0:0 <= the cursor's mark-delete: trimmable


def test_wrong_bytes_garbage_and_order():
    assert cats(obs([((0, 0), "aa"), ((0, 1), "cc")]), facts_basic()) == ["entry-corrupt", "entry-garbage"]
    assert "entry-order" in cats(obs([((0, 0), "bb"), ((0, 1), "aa")]), facts_basic())


def test_cursor_behind_lost_ahead():
    facts = facts_basic()
    assert cats(obs([((0, 0), "aa"), ((0, 1), "bb")], md=(0, -1)), facts) == ["cursor-behind"]
    assert cats(obs([((0, 0), "aa"), ((0, 1), "bb")], md=(0, 1)), facts) == ["cursor-ahead"]  # nobody acked 0:1
    assert cats(obs([((0, 0), "aa"), ((0, 1), "bb")], md=(0, 5)), facts) == ["cursor-ahead"]  # past the last entry
    o = obs([((0, 0), "aa"), ((0, 1), "bb")])
    del o["ledgers"][L]["cursors"]["s"]
    assert cats(o, facts) == ["cursor-lost"]


def test_a_crash_before_the_ack_allows_less():
    facts = facts_basic()
    before_second_ack = next(i for i, f in enumerate(facts) if f.tag == "ACK" and f.f.get("pos") == [0, 1])
    assert cats(obs([((0, 0), "aa")], md=(0, -1)), facts, seen=before_second_ack) == []


def test_deleted_ledger_must_stay_deleted():
    facts = facts_basic() + [fact("INTENT", "delete", 5, ledger=L), fact("ACK", "delete", 5, ledger=L)]
    assert cats(obs([((0, 0), "aa"), ((0, 1), "bb")]), facts) == ["ledger-resurrected"]
    gone = {"ledgers": {}, "missing": [L], "probe": {L: {"entries": [[0, 1, "bb"]], "cursors": {}}}, "errors": []}
    assert cats(gone, facts) == ["ledger-resurrected"]
    gone["probe"][L]["entries"] = []
    assert cats(gone, facts) == []


def test_missing_ledger_and_recovery_errors():
    gone = {"ledgers": {}, "missing": [L], "probe": {L: {"entries": [], "cursors": {}}}, "errors": []}
    assert cats(gone, facts_basic()) == ["ledger-missing"]
    assert cats({**obs([((0, 0), "aa"), ((0, 1), "bb")]), "errors": ["boom"]}, facts_basic()) == ["recovery-error"]


def test_metadata_must_hold_the_last_acknowledged_save_or_a_later_one():
    facts = [fact("INTENT", "meta", 0, path="m.json", data={"v": 1}), fact("ACK", "meta", 1, path="m.json", data={"v": 1}),
             fact("INTENT", "meta", 2, path="m.json", data={"v": 2})]
    index = FactIndex(facts)
    index.initial_meta = {"m.json": None}

    def check(value, exists=True, seen=3):
        o = {"ledgers": {}, "metadata": {"m.json": {"exists": exists, "data": value}}, "errors": []}
        return sorted({v.category for v in verify(o, index, seen)})
    assert check({"v": 1}) == [] and check({"v": 2}) == []  # the save in flight may have landed
    assert check({}, exists=False) == ["metadata-lost"]
    assert check({}, exists=False, seen=1) == []  # before the first ACK: no file is fine
    o = {"ledgers": {}, "metadata": {"m.json": {"error": "ValueError: corrupt"}}, "errors": []}
    assert [v.category for v in verify(o, index, 3)] == ["metadata-corrupt"]
