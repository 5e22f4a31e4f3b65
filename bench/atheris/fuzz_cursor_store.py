"""atheris harness over the cursor-state decoder (storage/cursor_store.py decode and load).

Input: byte 0 = flags (bit 0 wrap the rest in a valid frame, so magic, CRC and length match and the
body reaches the parser), then the slot bytes. Property (tests/fuzz/oracles.py check_cursor_slot):
decode raises only ValueError, what it accepts round-trips through encode, and load() falls back
past a corrupt newest slot without raising.

    python bench/atheris/fuzz_cursor_store.py --minutes 5
"""
from __future__ import annotations

import os
import tempfile

import atheris
from common import run

with atheris.instrument_imports(include=["minipulsar"]):
    from minipulsar.storage import Position, cursor_store

    from tests.fuzz import oracles

FOLDER = tempfile.mkdtemp(prefix="minipulsar-atheris-cursor-")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    raw = oracles.framed_slot(data[1:]) if data[0] & 1 else data[1:]
    for name in os.listdir(FOLDER):
        os.unlink(os.path.join(FOLDER, name))
    oracles.check_cursor_slot(FOLDER, raw)


def seeds() -> list[bytes]:
    state = cursor_store.CursorState(
        "sub", Position(3, 7), [(Position(3, 8), Position(3, 10)), (Position(4, 0), Position(4, 2))],
        {"pulsar.dedup": 12}, {"k": "v"}, seq=42)
    image = cursor_store.encode(state)
    body = image[cursor_store.FRAME.size:]
    return [b"\x00" + image, b"\x01" + body, b"\x01" + body[:40] + b'{"name": "x"}']


if __name__ == "__main__":
    run("cursor_store", test_one_input, seeds())
