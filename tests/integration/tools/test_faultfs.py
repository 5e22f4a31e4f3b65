"""faultfs drops what it must and keeps what was synced (tools/faultfs/README.md).

Each test mounts its own faultfs (the `ffs` fixture). While the file system is frozen by a trap
the test touches the mount only through the control socket: the kernel holds the page and
directory locks of the blocked operation, so a read or lookup nearby would block as well.
"""
from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from minipulsar.storage.segment import fsync_dir
from tests.helpers import wait_for
from tools.faultfs.control import FaultFSError

pytestmark = pytest.mark.timeout(60)


def write_file(path, data: bytes, sync: bool = True) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# (a)
def test_unsynced_data_is_lost_synced_data_kept(ffs):
    m = ffs.mountpoint
    write_file(m / "f", b"synced")
    fsync_dir(m)
    with open(m / "f", "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.write(b" and not synced")
    assert read(m / "f") == b"synced and not synced"
    assert ffs.stats()["bytes_unsynced"] == len(b" and not synced")
    report = ffs.power_loss()
    assert read(m / "f") == b"synced"
    assert report["dropped_bytes"] == len(b" and not synced")
    assert ffs.stats()["bytes_unsynced"] == 0


# (b)
def test_synced_file_vanishes_without_directory_fsync(ffs):
    m = ffs.mountpoint
    write_file(m / "kept", b"data and name fsynced")
    fsync_dir(m)
    write_file(m / "late", b"data fsynced, name never")
    report = ffs.power_loss()
    assert os.listdir(m) == ["kept"]
    assert read(m / "kept") == b"data and name fsynced"
    assert report["lost_paths"] == ["late"]


def test_created_file_with_fsynced_data_but_unsynced_directory_is_gone(ffs):
    m = ffs.mountpoint
    write_file(m / "f", b"fsynced data")
    assert ffs.tree(durable=True) == {}
    ffs.power_loss()
    assert os.listdir(m) == []
    write_file(m / "f", b"fsynced data")
    fsync_dir(m)
    assert ffs.tree(durable=True) == {"f": len(b"fsynced data")}
    ffs.power_loss()
    assert read(m / "f") == b"fsynced data"


# (c)
def test_rename_without_directory_fsync_reverts(ffs):
    m = ffs.mountpoint
    write_file(m / "old", b"content")
    fsync_dir(m)
    os.rename(m / "old", m / "new")
    assert os.listdir(m) == ["new"]
    ffs.power_loss()
    assert os.listdir(m) == ["old"]
    assert read(m / "old") == b"content"


def test_atomic_replace_with_file_and_directory_fsync_survives(ffs):
    m = ffs.mountpoint
    write_file(m / "target", b"v1")
    fsync_dir(m)
    # Replace without the directory fsync: the old content comes back, the temp file is gone.
    write_file(m / "target.tmp", b"v2")
    os.replace(m / "target.tmp", m / "target")
    ffs.power_loss()
    assert os.listdir(m) == ["target"] and read(m / "target") == b"v1"
    # The whole recipe: write temp, fsync it, rename over, fsync the directory.
    write_file(m / "target.tmp", b"v2")
    os.replace(m / "target.tmp", m / "target")
    fsync_dir(m)
    ffs.power_loss()
    assert os.listdir(m) == ["target"] and read(m / "target") == b"v2"


def test_replace_with_directory_fsync_but_unsynced_temp_data_is_empty(ffs):
    """The classic ext4 zero-length-file bug: rename made durable, the new file's data not."""
    m = ffs.mountpoint
    write_file(m / "target", b"v1")
    fsync_dir(m)
    write_file(m / "target.tmp", b"v2", sync=False)
    os.replace(m / "target.tmp", m / "target")
    fsync_dir(m)
    ffs.power_loss()
    assert read(m / "target") == b""


# (d)
def test_unlink_and_rmdir_without_directory_fsync_come_back(ffs):
    m = ffs.mountpoint
    os.mkdir(m / "d")
    write_file(m / "f", b"still here")
    fsync_dir(m)
    os.unlink(m / "f")
    os.rmdir(m / "d")
    assert os.listdir(m) == []
    ffs.power_loss()
    assert sorted(os.listdir(m)) == ["d", "f"]
    assert read(m / "f") == b"still here"
    os.unlink(m / "f")
    fsync_dir(m)
    ffs.power_loss()
    assert os.listdir(m) == ["d"]


# (e)
def test_mkdir_p_without_syncing_parents_loses_the_tree(ffs):
    m = ffs.mountpoint
    leaf = m / "a" / "b" / "c"
    os.makedirs(leaf)
    write_file(leaf / "f", b"deep")
    fsync_dir(leaf)  # the leaf's entries are durable, but not the leaf's own name
    report = ffs.power_loss()
    assert os.listdir(m) == []
    assert report["lost_paths"] == ["a", "a/b", "a/b/c", "a/b/c/f"]
    # Syncing every parent, bottom up, keeps it.
    os.makedirs(leaf)
    write_file(leaf / "f", b"deep")
    for d in (leaf, leaf.parent, leaf.parent.parent, m):
        fsync_dir(d)
    ffs.power_loss()
    assert read(leaf / "f") == b"deep"


def test_synced_parents_but_unsynced_middle_directory_loses_below_it(ffs):
    m = ffs.mountpoint
    os.makedirs(m / "a" / "b")
    write_file(m / "a" / "b" / "f", b"x")
    for d in (m / "a" / "b", m):  # a's entry "b" never synced
        fsync_dir(d)
    ffs.power_loss()
    assert os.listdir(m) == ["a"] and os.listdir(m / "a") == []


# (f)
@pytest.mark.skipif(not hasattr(os, "RWF_DSYNC"), reason="os.RWF_DSYNC needs Linux 4.7+ and Python 3.7+")
def test_pwritev_rwf_dsync_makes_data_durable(ffs):
    """The kernel turns pwritev2(RWF_DSYNC) into FUSE_WRITE + FUSE_FSYNC(datasync=1)."""
    m = ffs.mountpoint
    write_file(m / "seg", b"head")
    fsync_dir(m)
    before = ffs.stats()["ops"].get("fdatasync", 0)
    fd = os.open(m / "seg", os.O_WRONLY)
    try:
        assert os.pwritev(fd, [b"-rec1", b"-rec2"], 4, os.RWF_DSYNC) == 10
        os.pwritev(fd, [b"-lost"], 14)  # no flag: not durable
    finally:
        os.close(fd)
    assert ffs.stats()["ops"].get("fdatasync", 0) == before + 1
    ffs.power_loss()
    assert read(m / "seg") == b"head-rec1-rec2"


def test_o_dsync_writes_are_durable(ffs):
    m = ffs.mountpoint
    fd = os.open(m / "f", os.O_WRONLY | os.O_CREAT | os.O_DSYNC, 0o644)
    try:
        os.write(fd, b"one")
        os.write(fd, b"two")
    finally:
        os.close(fd)
    fsync_dir(m)
    assert ffs.stats()["ops"].get("fdatasync", 0) == 2
    ffs.power_loss()
    assert read(m / "f") == b"onetwo"


# (g)
def test_torn_power_loss_keeps_a_prefix_of_the_last_unsynced_write(ffs):
    m = ffs.mountpoint
    write_file(m / "f", b"")
    fsync_dir(m)
    last = bytes(range(65, 91)) * 4  # 104 bytes
    fd = os.open(m / "f", os.O_WRONLY)
    try:
        os.pwrite(fd, b"a" * 10, 0)  # an earlier unsynced write: dropped
        os.pwrite(fd, last, 10)  # the last one: torn
    finally:
        os.close(fd)
    report = ffs.power_loss(torn=True, seed=7)
    (torn,) = report["torn"]
    assert torn["path"] == "f" and torn["offset"] == 10 and torn["of"] == len(last)
    kept = torn["kept"]
    assert 0 < kept < len(last)
    assert read(m / "f") == b"\0" * 10 + last[:kept]
    # The same seed tears the same way.
    write_file(m / "g", b"")
    fsync_dir(m)
    with open(m / "g", "r+b") as f:
        f.write(last)
    again = ffs.power_loss(torn=True, seed=7)
    assert [t["path"] for t in again["torn"]] == ["g"]


def test_torn_power_loss_leaves_synced_files_alone(ffs):
    m = ffs.mountpoint
    write_file(m / "f", b"all synced")
    fsync_dir(m)
    assert ffs.power_loss(torn=True)["torn"] == []
    assert read(m / "f") == b"all synced"


# (h)
WRITER = textwrap.dedent("""
    import os, sys
    m = sys.argv[1]
    fd = os.open(m + "/f", os.O_CREAT | os.O_WRONLY, 0o644)
    os.fsync(fd)
    d = os.open(m, os.O_RDONLY | os.O_DIRECTORY); os.fsync(d); os.close(d)
    for i in range(5):
        os.write(fd, b"x%d" % i)
        os.fsync(fd)
        print("wrote", i, flush=True)
""")


def start_writer(m):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(m)], stdout=subprocess.PIPE, text=True)


def test_trap_before_freezes_at_the_nth_write(ffs):
    m = ffs.mountpoint
    ffs.trap("write", "f", nth=3, when="before")
    child = start_writer(m)
    try:
        (fired,) = ffs.wait_trap(timeout=15)
        assert fired["op"] == "write" and fired["path"] == "f" and fired["when"] == "before"
        stats = ffs.stats()
        assert stats["frozen"] and stats["ops"]["write"] == 3
        assert ffs.tree()["f"] == 4  # x0x1: the third write was not applied
        # Every later mutation blocks: a mkdir from another thread hangs until the power loss.
        outcome = {}

        def mkdir():
            try:
                os.mkdir(m / "later")
                outcome["result"] = "created"
            except OSError as exc:
                outcome["result"] = exc.errno
        t = threading.Thread(target=mkdir, daemon=True)
        t.start()
        wait_for(lambda: ffs.stats()["blocked"] >= 2, "the mkdir blocked behind the trap", timeout=10.0)
        assert "result" not in outcome
        child.kill()  # stays in the kernel until the power loss answers its write
        ffs.power_loss()
        t.join(10)
        assert outcome["result"] == errno.EIO
        child.wait(10)
        assert child.stdout.read().split("\n")[:2] == ["wrote 0", "wrote 1"]
    finally:
        if child.poll() is None:
            child.kill()
            ffs.power_loss()
            child.wait(10)
    assert os.listdir(m) == ["f"]
    assert read(m / "f") == b"x0x1"


def test_trap_after_applies_the_op_the_caller_never_sees_return(ffs):
    m = ffs.mountpoint
    ffs.trap("fsync", "f", nth=3, when="after")  # 1st fsync: the empty file; 3rd: after x1
    child = start_writer(m)
    try:
        (fired,) = ffs.wait_trap(timeout=15)
        assert fired["when"] == "after"
        assert ffs.tree(durable=True) == {"f": 4}
        child.kill()
        ffs.power_loss()
        child.wait(10)
        assert child.stdout.read().split("\n")[:2] == ["wrote 0", ""]  # "wrote 1" never printed
    finally:
        if child.poll() is None:
            child.kill()
            ffs.power_loss()
            child.wait(10)
    assert read(m / "f") == b"x0x1"


def test_resume_lets_blocked_operations_go_on(ffs):
    m = ffs.mountpoint
    ffs.trap("mkdir", "d*", nth=2)
    os.mkdir(m / "d1")
    t = threading.Thread(target=os.mkdir, args=(m / "d2",), daemon=True)
    t.start()
    ffs.wait_trap(timeout=10)
    assert "d2/" not in ffs.tree()
    ffs.resume()
    t.join(10)
    assert sorted(os.listdir(m)) == ["d1", "d2"]


def test_trap_glob_and_nth_count_only_matching_ops(ffs):
    m = ffs.mountpoint
    ffs.trap("create", "dir/*.seg", nth=2)
    os.mkdir(m / "dir")
    write_file(m / "dir" / "a.idx", b"", sync=False)
    write_file(m / "dir" / "a.seg", b"", sync=False)
    write_file(m / "dir" / "b.idx", b"", sync=False)
    assert ffs.stats()["traps_fired"] == []
    outcome = []

    def create():
        try:
            write_file(m / "dir" / "b.seg", b"")
        except OSError as exc:
            outcome.append(exc.errno)
    t = threading.Thread(target=create, daemon=True)
    t.start()
    (fired,) = ffs.wait_trap(timeout=10)
    assert fired["path"] == "dir/b.seg"
    ffs.power_loss()
    t.join(10)
    assert outcome == [errno.EIO]
    # A second trap on the same mount: wait_trap waits for it, not for the one already spent.
    ffs.trap("unlink", "dir/*", nth=1)
    with pytest.raises(FaultFSError, match="no trap fired"):
        ffs.wait_trap(timeout=0.3)
    assert ffs.stats()["traps_armed"] == 1 and len(ffs.stats()["traps_fired"]) == 1


# (i)
def test_eio_on_fsync_reaches_the_caller_and_the_data_is_not_durable(ffs):
    m = ffs.mountpoint
    write_file(m / "f", b"old")
    fsync_dir(m)
    ffs.fail("fsync", "f", "EIO", count=1)
    fd = os.open(m / "f", os.O_RDWR)
    try:
        os.pwrite(fd, b"new", 0)
        with pytest.raises(OSError) as failed:
            os.fsync(fd)
        assert failed.value.errno == errno.EIO
        # As on Linux: the failed pages are clean, still readable, and a later fsync succeeds
        # without writing them.
        assert os.pread(fd, 3, 0) == b"new"
        os.fsync(fd)
        os.pwrite(fd, b"+more", 3)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    (injected,) = ffs.stats()["failures_injected"]
    assert injected["op"] == "fsync" and injected["error"] == "EIO"
    ffs.power_loss()
    assert read(m / "f") == b"old+more"


def test_eio_on_fdatasync_and_rwf_dsync(ffs):
    m = ffs.mountpoint
    write_file(m / "0.seg", b"")
    fsync_dir(m)
    ffs.fail("fdatasync", "*.seg", "EIO")
    fd = os.open(m / "0.seg", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as failed:
            os.pwritev(fd, [b"record"], 0, os.RWF_DSYNC)
        assert failed.value.errno == errno.EIO
    finally:
        os.close(fd)
    ffs.power_loss()
    assert read(m / "0.seg") == b""


def test_enospc_on_write(ffs):
    m = ffs.mountpoint
    ffs.fail("write", "full", "ENOSPC", count=1)
    fd = os.open(m / "full", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(OSError) as failed:
            os.write(fd, b"data")
        assert failed.value.errno == errno.ENOSPC
        os.write(fd, b"ok")
    finally:
        os.close(fd)
    assert read(m / "full") == b"ok"


# (j)
def test_no_stale_page_cache_after_a_power_loss(ffs):
    m = ffs.mountpoint
    assert ffs.stats()["conn"]["writeback_cache"] is False  # every write reaches faultfs at once
    write_file(m / "f", b"A" * 8192)
    fsync_dir(m)
    with open(m / "f", "r+b") as f:
        f.write(b"B" * 8192)
    old = open(m / "f", "rb")  # this open caches the B pages
    try:
        assert old.read() == b"B" * 8192
        ffs.power_loss()
        assert os.stat(m / "f").st_size == 8192
        assert read(m / "f") == b"A" * 8192  # a new open sees the reverted bytes
        old.seek(0)
        with pytest.raises(OSError) as stale:  # a handle from before the power loss is dead
            old.read()
        assert stale.value.errno == errno.EIO
    finally:
        old.close()
    # Size changes too: a file that shrinks back.
    with open(m / "f", "ab") as f:
        f.write(b"C" * 5000)
    assert os.stat(m / "f").st_size == 13192
    ffs.power_loss()
    assert os.stat(m / "f").st_size == 8192 and read(m / "f") == b"A" * 8192


def test_flock_is_enforced_by_the_kernel_across_processes(ffs):
    """FUSE gets no flock request unless the file system implements it; the kernel then keeps
    flock locks itself, which is all a single-host test needs (the broker's data/LOCK)."""
    m = ffs.mountpoint
    fd = os.open(m / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        probe = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
                 "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('locked')\n"
                 "except BlockingIOError:\n    print('busy')\n")
        out = subprocess.run([sys.executable, "-c", probe, str(m / "LOCK")], capture_output=True, text=True,
                             timeout=20)
        assert out.stdout.strip() == "busy", out.stderr
        fcntl.flock(fd, fcntl.LOCK_UN)
        out = subprocess.run([sys.executable, "-c", probe, str(m / "LOCK")], capture_output=True, text=True,
                             timeout=20)
        assert out.stdout.strip() == "locked", out.stderr
    finally:
        os.close(fd)


def test_everyday_operations(ffs):
    """What the broker uses besides the above: O_TRUNC, ftruncate, fallocate, link, readdir,
    statfs, stat; and unlink of an open file."""
    m = ffs.mountpoint
    write_file(m / "f", b"0123456789")
    write_file(m / "f", b"xy")  # O_TRUNC of an existing file
    assert read(m / "f") == b"xy"
    fd = os.open(m / "f", os.O_RDWR)
    try:
        os.ftruncate(fd, 5)
        assert os.pread(fd, 10, 0) == b"xy\0\0\0"
        os.posix_fallocate(fd, 0, 8)
        assert os.fstat(fd).st_size == 8
        os.unlink(m / "f")
        os.pwrite(fd, b"still open", 0)
        assert os.pread(fd, 10, 0) == b"still open"
    finally:
        os.close(fd)
    write_file(m / "g", b"g")
    os.link(m / "g", m / "h")
    assert os.stat(m / "h").st_nlink == 2 and os.stat(m / "g").st_ino == os.stat(m / "h").st_ino
    os.makedirs(m / "d" / "e")
    assert sorted(os.listdir(m)) == ["d", "g", "h"]
    assert os.statvfs(m).f_bsize == 4096
    with pytest.raises(OSError) as busy:
        os.rmdir(m / "d")
    assert busy.value.errno == errno.ENOTEMPTY
    with pytest.raises(FileExistsError):
        os.mkdir(m / "d")
    fsync_dir(m)
    ffs.power_loss()
    assert sorted(os.listdir(m)) == ["d", "g", "h"] and os.listdir(m / "d") == []
    assert ffs.stats()["inodes"] == 3  # root, d, and g/h (one inode): the rest was collected
