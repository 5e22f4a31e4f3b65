"""The strace parser and the trace -> ops converter, on lines in the format strace 6 prints with
``-f -qq -y -xx -e raw=read,readv`` (several captured from a run of the storage workloads)."""
from __future__ import annotations

import pytest

from tools.crashstates.fsmodel import FS
from tools.crashstates.recorder import convert
from tools.crashstates.strace_parse import Atom, StraceParser, TruncatedString, decode_escapes, parse_args, parse_lines


def hx(s: str | bytes) -> str:
    """What -xx prints for a string: every byte as \\xNN."""
    return "".join(f"\\x{b:02x}" for b in (s.encode() if isinstance(s, str) else s))


# Captured verbatim (strace 6.1, Python 3.11 threads).
CLONE3 = ("23333 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|"
          "CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f0e2dc28990, parent_tid=0x7f0e2dc28990, "
          "exit_signal=0, stack=0x7f0e2d428000, stack_size=0x7fff80, tls=0x7f0e2dc286c0} => {parent_tid=[23335]}, 88) = 23335")
RAW_READ = "23333 read(0x3, 0x7ffce5e93cf8, 0x340)  = 0x340"
INTERLEAVED = [
    f'23333 write(6<{hx("/tmp/cs/acks")}>, "{hx("ACK add 1:0")}\\x0a", 12 <unfinished ...>',
    f'23336 openat(AT_FDCWD<{hx("/tmp/cs")}>, "{hx("/tmp/cs/data/0.idx.tmp")}", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666 <unfinished ...>',
    f'23336 <... openat resumed>)             = 8<{hx("/tmp/cs/data/0.idx.tmp")}>',
    '23333 <... write resumed>)              = 12',
]


def test_hex_strings_and_fd_paths_are_decoded():
    (sc,) = parse_lines([f'23336 openat(AT_FDCWD<{hx("/tmp/cs")}>, "{hx("/tmp/cs/data/LOCK")}", O_RDWR|O_CREAT|O_CLOEXEC, 0644)'
                         f' = 7<{hx("/tmp/cs/data/LOCK")}>'])
    assert sc.tid == 23336 and sc.name == "openat" and sc.ok
    assert sc.args[0] == Atom("AT_FDCWD", "/tmp/cs")
    assert sc.args[1] == b"/tmp/cs/data/LOCK"
    assert sc.args[2].flags() == {"O_RDWR", "O_CREAT", "O_CLOEXEC"}
    assert sc.args[3].int() == 0o644
    assert (sc.ret, sc.ret_path) == (7, "/tmp/cs/data/LOCK")


def test_unfinished_calls_are_joined_and_ordered_by_completion():
    calls = parse_lines(INTERLEAVED)
    assert [(c.tid, c.name) for c in calls] == [(23336, "openat"), (23333, "write")]
    openat, write = calls
    assert openat.ret == 8 and openat.ret_path == "/tmp/cs/data/0.idx.tmp"
    assert openat.args[2].flags() >= {"O_CREAT", "O_TRUNC"}
    assert write.args[1] == b"ACK add 1:0\n" and write.ret == 12


# Seen in CI: the kernel released fd 9 at close's entry and handed it to another thread's openat,
# whose result strace printed before ``<... close resumed>``.
def close_race(d: str) -> list[str]:
    return [
        f'20 close(9<{hx(d + "/cursors")}> <unfinished ...>',
        f'21 openat(AT_FDCWD<{hx("/w")}>, "{hx(d)}", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 9<{hx(d)}>',
        '20 <... close resumed>)              = 0',
        f'21 fsync(9<{hx(d)}>) = 0',
    ]


def test_an_interrupted_close_takes_effect_at_its_entry():
    calls = parse_lines(close_race("/r/data"))
    assert [(c.tid, c.name, c.ret) for c in calls] == [(20, "close", 0), (21, "openat", 9), (21, "fsync", 0)]


def test_a_descriptor_reused_before_close_resumed_is_followed():
    d = "/r/data"
    lines = [f'10 mkdir("{hx(d)}", 0777) = 0', f'10 mkdir("{hx(d + "/cursors")}", 0777) = 0',
             f'20 openat(AT_FDCWD<{hx("/w")}>, "{hx(d + "/cursors")}", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 9<{hx(d + "/cursors")}>',
             *close_race(d)]
    conv = convert(lines, "/r", "/w/acks", FS(), cwd="/w")
    fsync = conv.log.ops[-1]
    assert fsync.kind == "fsync" and fsync.ino == conv.log.lookup("data")


def test_pwritev2_iovec_offset_and_rwf_dsync():
    line = (f'23336 pwritev2(8<{hx("/tmp/cs/data/0.seg")}>, [{{iov_base="{hx(bytes([2, 0, 0, 0, 0x55, 0x49, 0xf1, 0x61]))}", '
            f'iov_len=8}}, {{iov_base="{hx("e0")}", iov_len=2}}], 2, 16, RWF_DSYNC) = 10')
    (sc,) = parse_lines([line])
    assert sc.args[0].path == "/tmp/cs/data/0.seg" and sc.args[0].int() == 8
    assert [iov["iov_base"] for iov in sc.args[1]] == [b"\x02\x00\x00\x00UI\xf1a", b"e0"]
    assert sc.args[3].int() == 16 and sc.args[4].flags() == {"RWF_DSYNC"} and sc.ret == 10


def test_failed_calls_carry_their_errno():
    (sc,) = parse_lines([f'1 unlink("{hx("/tmp/cs/nope")}") = -1 ENOENT (No such file or directory)'])
    assert sc.ret == -1 and sc.errno == "ENOENT" and not sc.ok


def test_raw_read_and_clone3_in_out_struct():
    read, clone = parse_lines([RAW_READ, CLONE3])
    assert read.args[0].int() == 3 and read.ret == 0x340
    assert "CLONE_THREAD" in clone.args[0]["flags"].flags() and clone.args[0]["parent_tid"][0].int() == 23335
    assert clone.ret == 23335


def test_noise_lines_are_skipped_and_unknown_results_kept_as_none():
    calls = parse_lines(["23333 +++ exited with 0 +++", "23335 --- SIGCHLD {si_signo=SIGCHLD} ---",
                         f'23335 fsync(9<{hx("/x")}>) = ?', "garbage"])
    assert len(calls) == 1 and calls[0].ret is None and not calls[0].ok


def test_a_string_cut_at_the_s_limit_is_refused():
    with pytest.raises(TruncatedString):
        parse_lines([f'1 write(3<{hx("/x")}>, "{hx("abc")}"..., 100000) = 100000'])


def test_c_escapes_without_xx():
    assert decode_escapes(r"a\n\t\\\"\x41\101") == b'a\n\t\\"AA'
    assert parse_args(r'"x\"y", 3') == [b'x"y', Atom("3")]


def test_keep_filter_drops_calls_before_parsing():
    p = StraceParser(keep=lambda text: "wanted" in text)
    assert p.feed('1 close(3</wanted>) = 0') is not None
    assert p.feed('1 close(4</other>) = 0') is None


# -- the converter: syscalls -> ops on the model, acks -> facts ------------------------------------
ACK_LINE = 'ACK 1 {"kind": "open", "ledger": "t"}\n'


def trace_lines(root: str, ack: str) -> list[str]:
    d = root + "/data"
    return [
        f'10 mkdir("{hx(d)}", 0777) = 0',
        f'10 openat(AT_FDCWD<{hx("/w")}>, "{hx(d + "/f.tmp")}", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 5<{hx(d + "/f.tmp")}>',
        f'10 write(5<{hx(d + "/f.tmp")}>, "{hx("hello ")}", 6) = 6',
        f'10 write(5<{hx(d + "/f.tmp")}>, "{hx("world")}", 5) = 5',
        f'10 fsync(5<{hx(d + "/f.tmp")}>) = 0',
        f'10 close(5<{hx(d + "/f.tmp")}>) = 0',
        f'11 rename("{hx(d + "/f.tmp")}", "{hx(d + "/f")}") = 0',
        f'11 openat(AT_FDCWD<{hx("/w")}>, "{hx(d)}", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 5<{hx(d)}>',
        f'11 fsync(5<{hx(d)}>) = 0',
        f'11 close(5<{hx(d)}>) = 0',
        f'10 write(7<{hx(ack)}>, "{hx(ACK_LINE)}", 38) = 38',
        f'12 openat(AT_FDCWD<{hx("/w")}>, "{hx(d + "/seg")}", O_WRONLY|O_CREAT|O_CLOEXEC, 0644) = 6<{hx(d + "/seg")}>',
        f'12 pwritev2(6<{hx(d + "/seg")}>, [{{iov_base="{hx("ab")}", iov_len=2}}, {{iov_base="{hx("cd")}", iov_len=2}}], 2, 8, RWF_DSYNC) = 4',
        f'12 lseek(6<{hx(d + "/seg")}>, 100, SEEK_SET) = 100',
        f'12 ftruncate(6<{hx(d + "/seg")}>, 4) = 0',
        f'12 openat(AT_FDCWD<{hx("/w")}>, "{hx("/usr/lib/python3.11/os.py")}", O_RDONLY|O_CLOEXEC) = 6<{hx("/usr/lib/python3.11/os.py")}>',
        f'12 write(6<{hx("/usr/lib/python3.11/os.py")}>, "{hx("nope")}", 4) = 4',
        f'12 unlinkat(5<{hx(d)}>, "{hx("f")}", 0) = 0',
    ]


def test_converter_builds_inode_ops_and_places_acks():
    conv = convert(trace_lines("/r", "/w/acks"), "/r", "/w/acks", FS(), cwd="/w")
    ops = conv.log.ops
    assert [op.kind for op in ops] == ["link", "link", "write", "write", "fsync", "rename", "fsync",
                                       "link", "write", "trunc", "unlink"]
    mkdir, create, w1, w2 = ops[:4]
    assert mkdir.new and conv.log.kinds[mkdir.ino] == "d" and create.parent == mkdir.ino and create.name == "f.tmp"
    assert (w1.off, w1.data, w2.off, w2.data) == (0, b"hello ", 6, b"world")  # file offset followed
    seg_write = ops[8]
    assert seg_write.durable and seg_write.off == 8 and seg_write.data == b"abcd"
    assert ops[9].size == 4  # ftruncate; the write to os.py (fd 6 reused outside the root) is ignored
    assert ops[6].ino == mkdir.ino  # the directory fsync
    (fact,) = conv.facts
    assert (fact.tag, fact.id, fact.kind, fact.f, fact.pos) == ("ACK", 1, "open", {"ledger": "t"}, 7)
    assert conv.log.live.tree() == {"data": None, "data/seg": b"\0" * 4}


def test_converter_refuses_what_it_cannot_model():
    from tools.crashstates.fsmodel import ModelError
    with pytest.raises(ModelError):
        convert([f'1 symlink("{hx("x")}", "{hx("/r/l")}") = 0'], "/r", "/w/acks", FS(), cwd="/w")
    with pytest.raises(ModelError):  # a write through an fd the recorder never saw opened
        convert([f'1 write(9<{hx("/r/f")}>, "{hx("x")}", 1) = 1'], "/r", "/w/acks", FS(), cwd="/w")
