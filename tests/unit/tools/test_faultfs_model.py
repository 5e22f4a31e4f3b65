"""faultfs's in-memory model (tools/faultfs/model.py) without FUSE: the byte-range bookkeeping
that decides what an fsync makes durable, checked against a plain oracle."""
from __future__ import annotations

import errno
import random

import pytest

from tools.faultfs.model import FSError, Model


def test_fsync_makes_the_durable_bytes_equal_the_current_ones_whatever_came_before():
    rng = random.Random(1)
    for _ in range(200):
        m = Model()
        node = m.create("f", 0o644)
        m.fsync_dir(m.root)
        durable = b""
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.55:
                off = rng.randint(0, len(node.data) + 20)
                m.write(node, bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))), off)
            elif r < 0.75:
                m.truncate(node, rng.randint(0, len(node.data) + 30))
            elif r < 0.9:
                m.fsync_file(node)
                durable = bytes(node.data)
                assert bytes(node.durable_data) == durable
            else:
                m.power_loss()
                node = m.lookup("f")
                assert bytes(node.data) == durable


def test_failed_fsync_keeps_bytes_visible_but_never_durable():
    m = Model()
    node = m.create("f", 0o644)
    m.fsync_dir(m.root)
    m.write(node, b"0123456789", 0)
    m.fsync_file(node)
    m.write(node, b"abc", 2)  # lost by the failed fsync
    m.write(node, b"XYZ", 12)  # extends the file: the durable file gets zeros there
    m.fsync_failed(node)
    assert bytes(node.data) == b"01abc56789\0\0XYZ"
    m.write(node, b"!", 0)
    m.fsync_file(node)  # succeeds, writes only what came after the failure, and the size
    m.power_loss()
    assert bytes(m.lookup("f").data) == b"!123456789\0\0\0\0\0"


def test_rename_rules():
    m = Model()
    m.mkdir("d", 0o755)
    m.mkdir("d/e", 0o755)
    m.create("f", 0o644)
    with pytest.raises(FSError) as exc:
        m.rename("d", "d/e/x")
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(FSError) as exc:
        m.rename("f", "d")
    assert exc.value.errno == errno.EISDIR
    with pytest.raises(FSError) as exc:
        m.rename("d", "f")
    assert exc.value.errno == errno.ENOTDIR
    m.mkdir("empty", 0o755)
    m.rename("d/e", "empty")  # a directory over an empty one
    assert sorted(m.root.entries) == ["d", "empty", "f"] and m.lookup("d").entries == {}


def test_rename_between_directories_is_durable_per_directory():
    m = Model()
    m.mkdir("a", 0o755)
    m.mkdir("b", 0o755)
    m.create("a/f", 0o644)
    for d in ("a", "b", ""):
        m.fsync_dir(m.lookup(d))
    m.rename("a/f", "b/f")
    m.fsync_dir(m.lookup("b"))  # only the destination: the file now has two durable names
    m.power_loss()
    assert "f" in m.lookup("a").entries and "f" in m.lookup("b").entries
    assert m.lookup("a/f") is m.lookup("b/f") and m.lookup("a/f").nlink == 2


def test_gc_keeps_what_durable_entries_still_name():
    m = Model()
    node = m.create("f", 0o644)
    m.write(node, b"x", 0)
    m.fsync_file(node)
    m.fsync_dir(m.root)
    m.unlink("f")
    m.gc()
    assert node.ino in m.inodes  # the root's durable entries still name it
    m.fsync_dir(m.root)
    m.gc()
    assert node.ino not in m.inodes
