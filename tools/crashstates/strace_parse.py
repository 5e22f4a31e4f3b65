"""Parse the output of ``strace -f -qq -y -xx -s N -e raw=read,readv`` into completed system calls.

One :class:`Syscall` per completed call, in the order the calls *completed*: strace prints a call
whose thread was interrupted by another thread's output as ``NAME(args <unfinished ...>`` and
finishes it later as ``<... NAME resumed>rest) = ret``; the joined call takes the place of its
``resumed`` line, which is where its result was returned. The exception is ``close``: the kernel
releases the descriptor when the call starts, so another thread may be handed the same number and
have its call printed before ``<... close resumed>``; an interrupted ``close`` is therefore given at
its ``unfinished`` line, with the result 0.

Values (see :func:`parse_args`): strings become ``bytes`` (``-xx`` prints every byte as ``\\xNN``;
the usual C escapes are decoded too), ``[...]`` lists, ``{k=v, ...}`` dicts, everything else an
:class:`Atom` holding its text and, for file descriptors decoded by ``-y``, the path (``Atom.path``).
A string that strace cut at ``-s`` raises :class:`TruncatedString`: its data would be wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Atom", "Syscall", "StraceParser", "TruncatedString", "parse_args", "parse_lines", "decode_escapes"]


class TruncatedString(ValueError):
    """strace printed a string cut at its -s limit (``"..."...``)."""


@dataclass(frozen=True)
class Atom:
    """An unquoted value: a number, a flag set (``O_WRONLY|O_CREAT``), ``NULL``, a name, or a file
    descriptor with its ``-y`` path (``8</tmp/x>``: text ``"8"``, path ``"/tmp/x"``)."""

    text: str
    path: str | None = None

    def int(self) -> int:
        """The value as an int (decimal, ``0x`` hex, or ``0`` octal as strace prints modes)."""
        last = self.text.split("|")[-1]  # "S_IFREG|0644" -> 0644
        return _to_int(last if last[:1].isdigit() else self.text)

    def flags(self) -> set[str]:
        """The ``|``-separated names (numbers stay as their text)."""
        return set(self.text.split("|")) if self.text else set()

    @property
    def deleted(self) -> bool:
        return self.path is not None and self.path.endswith(" (deleted)")


def _to_int(t: str) -> int:
    t = t.strip()
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.startswith(("0x", "0X")):
        v = int(t, 16)
    elif len(t) > 1 and t.startswith("0") and t.isdigit():
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


@dataclass
class Syscall:
    """A completed system call: thread id, name, parsed arguments, return value (None when strace
    printed ``?``), the errno name of a failed call, the ``-y`` path of a returned fd, and the line."""

    tid: int
    name: str
    args: list
    ret: int | None
    errno: str | None = None
    ret_path: str | None = None
    line: str = field(default="", repr=False)
    lineno: int = 0

    @property
    def ok(self) -> bool:
        return self.ret is not None and self.errno is None and self.ret >= 0


_ESC = re.compile(rb"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", re.S)
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"v": b"\v", b"f": b"\f", b"\\": b"\\", b'"': b'"',
           b"'": b"'", b"a": b"\a", b"b": b"\b", b"e": b"\x1b"}


def decode_escapes(text: str) -> bytes:
    """Bytes of a strace string body (``\\xNN``, octal and C escapes)."""
    raw = text.encode("latin-1", "backslashreplace")
    if b"\\" not in raw:
        return raw
    if re.fullmatch(rb"(?:\\x[0-9a-fA-F]{2})*", raw):  # the -xx fast path
        return bytes.fromhex(raw.replace(b"\\x", b"").decode())

    def sub(m: re.Match) -> bytes:
        e = m.group(1)
        if e[:1] == b"x":
            return bytes([int(e[1:], 16)])
        if e[:1].isdigit():
            return bytes([int(e, 8) & 0xFF])
        return _SIMPLE.get(e, b"\\" + e)
    return _ESC.sub(sub, raw)


def _decode_path(text: str) -> str:
    return decode_escapes(text).decode("utf-8", "surrogateescape")


class _Args:
    """Recursive-descent reader of one call's argument text."""

    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def skip_ws(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            if s[self.i] in " \t":
                self.i += 1
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                self.i = n if end < 0 else end + 2
            else:
                break

    def values(self, closer: str | None) -> list:
        out = []
        while True:
            self.skip_ws()
            if self.i >= len(self.s) or (closer and self.s[self.i] == closer):
                if closer:
                    self.i += 1
                return out
            out.append(self.value())
            self.skip_ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1

    def value(self):
        self.skip_ws()
        c = self.s[self.i] if self.i < len(self.s) else ""
        if c == '"':
            v = self.string()
        elif c == "[":
            self.i += 1
            v = self.values("]")
        elif c == "{":
            self.i += 1
            v = self.struct()
        else:
            v = self.atom()
        self.skip_ws()
        if self.s.startswith("=>", self.i):  # an in/out argument: its value on return wins
            self.i += 2
            out = self.value()
            v = {**v, **out} if isinstance(v, dict) and isinstance(out, dict) else out
        return v

    def string(self) -> bytes:
        s = self.s
        j = self.i + 1
        while True:
            k = s.find('"', j)
            if k < 0:
                raise ValueError(f"unterminated string in {s!r}")
            # a quote preceded by an odd number of backslashes is escaped
            bs = 0
            while s[k - 1 - bs] == "\\":
                bs += 1
            if bs % 2 == 0:
                break
            j = k + 1
        body = s[self.i + 1:k]
        self.i = k + 1
        if s.startswith("...", self.i):
            raise TruncatedString("strace cut a string at its -s limit; raise -s")
        return decode_escapes(body)

    def struct(self) -> dict:
        out: dict = {}
        n = 0
        while True:
            self.skip_ws()
            if self.i >= len(self.s):
                return out
            if self.s[self.i] == "}":
                self.i += 1
                return out
            m = re.compile(r"([A-Za-z_][\w.]*)=").match(self.s, self.i)
            if m:
                self.i = m.end()
                out[m.group(1)] = self.value()
            else:
                out[n] = self.value()
                n += 1
            self.skip_ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1

    def atom(self) -> Atom:
        s, n = self.s, len(self.s)
        start = self.i
        path = None
        text_end = None
        depth = 0
        while self.i < n:
            c = s[self.i]
            if c == "<" and depth == 0:
                text_end = self.i
                end = s.find(">", self.i + 1)
                if end < 0:
                    end = n
                path = _decode_path(s[self.i + 1:end])
                self.i = end + 1
                continue
            if c in "([":
                depth += 1
            elif c in ")]" and depth:
                depth -= 1
            elif depth == 0 and c in ",]}" or (depth == 0 and s.startswith("=>", self.i)):
                break
            self.i += 1
        text = s[start:text_end if text_end is not None else self.i].strip()
        return Atom(text, path)


def parse_args(text: str) -> list:
    """The argument list of one call (the text between its parentheses)."""
    return _Args(text).values(None)


_CALL = re.compile(r"^(?P<name>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>.*)$", re.S)
_RET = re.compile(r"^(?P<val>-?(?:0x[0-9a-fA-F]+|\d+))(?:<(?P<path>[^>]*)>)?(?:\s+(?P<errno>E[A-Z0-9]+)\b)?")
_LINE = re.compile(r"^(?P<tid>\d+)\s+(?P<rest>.*)$", re.S)
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (?P<name>\w+) resumed>(?P<rest>.*)$", re.S)


class StraceParser:
    """Feed lines one by one; :meth:`feed` returns the calls they complete (0, 1 or more)."""

    def __init__(self, keep=None):
        """keep(text) -> bool: a cheap filter on the joined call text; calls it rejects are
        dropped before their arguments are parsed (the recorder keeps only its paths)."""
        self._pending: dict[int, str] = {}
        self._keep = keep
        self.lineno = 0

    def feed(self, line: str) -> Syscall | None:
        self.lineno += 1
        line = line.rstrip("\n")
        m = _LINE.match(line)
        if not m:
            return None
        tid, rest = int(m.group("tid")), m.group("rest")
        if rest.startswith(("+++", "---")):
            return None
        r = _RESUMED.match(rest)
        if r:
            head = self._pending.pop(tid, None)
            if head is None:  # the start was filtered out, lost, or a close already given
                return None
            rest = head + r.group("rest")
        if rest.endswith(_UNFINISHED):
            head = rest[: -len(_UNFINISHED)]
            if head.startswith("close("):  # released at entry (close(2): even on EINTR); not pending
                rest = head + ") = 0"
            else:
                self._pending[tid] = head
                return None
        if self._keep is not None and not self._keep(rest):
            return None
        return self.parse_call(tid, rest, line)

    def parse_call(self, tid: int, text: str, line: str = "") -> Syscall | None:
        c = _CALL.match(text)
        if not c:
            return None
        name = c.group("name")
        ret_text = c.group("ret").strip()
        if ret_text.startswith("?"):
            ret, errno, path = None, None, None
        else:
            rm = _RET.match(ret_text)
            if not rm:
                return None
            ret = _to_int(rm.group("val"))
            errno = rm.group("errno")
            path = _decode_path(rm.group("path")) if rm.group("path") is not None else None
        return Syscall(tid, name, parse_args(c.group("args")), ret, errno, path, line or text, self.lineno)


def parse_lines(lines, keep=None) -> list[Syscall]:
    """Every completed call of ``lines``, in completion order."""
    p = StraceParser(keep)
    out = []
    for line in lines:
        sc = p.feed(line)
        if sc is not None:
            out.append(sc)
    return out
