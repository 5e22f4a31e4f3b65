"""An entry as reads return it: its position and its opaque bytes (Pulsar ``EntryImpl``)."""
from __future__ import annotations

import functools
from typing import NamedTuple

from .position import Position


class Entry(NamedTuple):
    """One stored entry: its position and its opaque bytes. A NamedTuple: built for every entry
    read, and a frozen dataclass costs several times more to construct."""

    position: Position
    data: bytes


make_entry = functools.partial(tuple.__new__, Entry)
"""``make_entry((position, data))``: the same Entry without the NamedTuple's Python-level
``__new__``, as :data:`storage.position.make_position`; for the paths that build one per entry."""
