"""The crash-state builder on hand-written traces: what POSIX lets survive a power loss."""
from __future__ import annotations

from tools.crashstates.fsmodel import FS, ROOT, OpLog
from tools.crashstates.states import Options, build_states, candidates, crash_points, replay, split


def end_trees(log: OpLog, opts: Options | None = None) -> list[dict]:
    """The distinct trees a crash at the end of the trace may leave."""
    states, _ = build_states(log.initial, log.ops, log.kinds, opts)
    end = len(log.ops)
    return [st.fs.tree() for st in states if any(o.crash == end for o in st.origins)]


def all_trees(log: OpLog, opts: Options | None = None) -> list[dict]:
    states, _ = build_states(log.initial, log.ops, log.kinds, opts)
    return [st.fs.tree() for st in states]


def initial(files: dict[str, bytes]) -> FS:
    log = OpLog()
    for path, data in files.items():
        log.write(log.create(path), 0, data)
    return log.live


def test_a_synced_file_survives():
    log = OpLog()
    f = log.create("f")
    log.write(f, 0, b"hello")
    log.fsync(f)
    log.fsync(ROOT)
    assert end_trees(log) == [{"f": b"hello"}]


def test_an_unsynced_create_vanishes():
    log = OpLog()
    f = log.create("f")
    log.write(f, 0, b"hello")
    log.fsync(f)  # the data is durable, the name is not: only a directory fsync makes it so
    trees = end_trees(log)
    assert {} in trees and {"f": b"hello"} in trees
    assert all(t in ({}, {"f": b"hello"}) for t in trees)


def test_a_rename_without_directory_fsync_reverts():
    log = OpLog(initial({"f": b"old"}))
    tmp = log.create("f.tmp")
    log.write(tmp, 0, b"new")
    log.fsync(tmp)
    log.rename("f.tmp", "f")
    trees = end_trees(log)
    assert {"f": b"old"} in trees and {"f": b"new"} in trees
    assert all(t.get("f") in (b"old", b"new") for t in trees)  # atomic: never empty, never torn
    log.fsync(ROOT)
    assert end_trees(log) == [{"f": b"new"}]


def test_a_torn_write_keeps_half():
    log = OpLog(initial({"f": b""}))
    f = log.lookup("f")
    log.write(f, 0, b"0123456789")  # unsynced
    trees = end_trees(log)
    assert {"f": b"01234"} in trees and {"f": b"0123456789"} in trees and {"f": b""} in trees
    thorough = end_trees(log, Options(thorough=True))
    assert {"f": b"01234" + bytes(5)} in thorough  # the zero-filled tear: size reached the disk, data not


def test_a_dsync_write_is_durable_when_it_returns():
    log = OpLog(initial({"seg": b"H"}))
    seg = log.lookup("seg")
    log.write(seg, 1, b"record", durable=True)
    assert end_trees(log) == [{"seg": b"Hrecord"}]
    # ... and while it is in flight it may be anything from absent to torn to whole
    inflight = [st.fs.tree() for st in build_states(log.initial, log.ops, log.kinds)[0]
                if any(o.crash == 0 for o in st.origins)]
    assert {"seg": b"H"} in inflight and {"seg": b"Hrec"} in inflight and {"seg": b"Hrecord"} in inflight


def test_a_directory_fsync_does_not_make_its_own_entry_durable():
    """The first-boot pattern: data/ and data/ledgers/ made with makedirs, only the inner one synced."""
    log = OpLog()
    d = log.mkdir("data")
    sub = log.mkdir("data/ledgers")
    f = log.create("data/ledgers/NAME")
    log.write(f, 0, b"t")
    log.fsync(f)
    log.fsync(sub)
    trees = end_trees(log)
    assert {} in trees  # data/ itself never reached the disk
    assert {"data": None} in trees  # data/ did, its entry for ledgers/ did not
    log.fsync(d)
    log.fsync(ROOT)
    assert end_trees(log) == [{"data": None, "data/ledgers": None, "data/ledgers/NAME": b"t"}]


def test_an_unlink_without_directory_fsync_can_come_back_and_single_dir_ops_are_left_out():
    log = OpLog(initial({"a": b"1", "b": b"2"}))
    log.unlink("a")
    log.unlink("b")
    trees = end_trees(log)
    assert {"a": b"1", "b": b"2"} in trees and {} in trees
    assert {"b": b"2"} in trees  # prefix: only the first unlink reached the disk
    assert {"a": b"1"} in trees  # omit: the first unlink lost, the second kept (reordered)


def test_writes_to_one_file_keep_their_order_by_default():
    log = OpLog(initial({"f": b""}))
    f = log.lookup("f")
    log.write(f, 0, b"AAAA")
    log.write(f, 4, b"BBBB")
    for t in all_trees(log):
        assert not (t["f"][4:8] == b"BBBB" and t["f"][:4] != b"AAAA")


def test_durable_and_unsynced_split_and_crash_points():
    log = OpLog()
    f = log.create("f")        # 0: dir op on the root
    log.write(f, 0, b"x")      # 1
    log.fsync(f)               # 2: makes 1 durable, not 0
    log.write(f, 1, b"y")      # 3
    log.fsync(ROOT)            # 4: makes 0 durable
    assert crash_points(log.ops) == [2, 4, 5]
    assert split(log.ops, 2) == ([], [0, 1])
    assert split(log.ops, 4) == ([1], [0, 3])
    assert split(log.ops, 5) == ([0, 1], [3])
    kinds = {c.kind for c in candidates(log.ops, 5)}
    assert kinds == {"all", "none", "torn"}


def test_identical_states_are_checked_once():
    log = OpLog(initial({"f": b"same"}))
    f = log.lookup("f")
    log.fsync(f)
    log.fsync(f)
    states, total = build_states(log.initial, log.ops, log.kinds)
    assert len(states) == 1 and total == 3 and len(states[0].origins) == 3


def test_replay_of_a_candidate_is_what_materialize_writes(tmp_path):
    log = OpLog()
    d = log.mkdir("d")
    f = log.create("d/f")
    log.write(f, 0, b"abc")
    cand = next(c for c in candidates(log.ops, len(log.ops)) if c.kind == "all")
    fs = replay(log.initial, log.ops, log.kinds, cand)
    fs.materialize(str(tmp_path))
    assert (tmp_path / "d" / "f").read_bytes() == b"abc"
    assert FS.from_disk(str(tmp_path)).digest() == fs.digest()
    assert d in log.kinds


def test_preallocated_zeros_read_back_as_written_and_digest_as_the_same_bytes_written_out(tmp_path):
    log = OpLog()
    f = log.create("journal")
    log.write(f, 0, bytes(1 << 20))  # a preallocation: held as a size, not as a megabyte of zeros
    log.write(f, 16, b"entry")
    log.write(f, 1 << 20, bytes(8))  # grows the file past its preallocation
    log.truncate(f, (1 << 20) + 4)
    expected = bytes(16) + b"entry" + bytes((1 << 20) + 4 - 21)
    fs = log.live
    assert fs.tree() == {"journal": expected} and log.size(f) == len(expected)
    assert len(fs.data[f]) == 21
    fs.materialize(str(tmp_path))
    assert (tmp_path / "journal").read_bytes() == expected
    written_out = OpLog()
    g = written_out.create("journal")
    written_out.write(g, 0, expected[:100])  # the same bytes, the zeros after "entry" held as bytes
    written_out.write(g, 100, expected[100:])
    assert written_out.live.digest() == fs.digest() == FS.from_disk(str(tmp_path)).digest()


def test_a_torn_preallocation_grows_the_file_by_half():
    log = OpLog(initial({"f": b"ab"}))
    log.write(log.lookup("f"), 2, bytes(10))
    torn = {t["f"] for t in end_trees(log)}
    assert torn == {b"ab", b"ab" + bytes(5), b"ab" + bytes(10)}
