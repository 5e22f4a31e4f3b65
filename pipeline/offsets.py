"""Positions in a topic partition and the JSON offsets Spark stores in its checkpoint.

A position is ``(ledgerId, entryId, batchIndex)``, the ordering key of a ``client.MessageId``.
Ranges are half-open: a range ``(start, end]`` holds every message after ``start`` up to and
including ``end``. Positions are entry-aware, because an offset may name a whole entry
(``batchIndex == -1``) even when that entry is a batch:

* ``start`` with ``batchIndex == -1`` excludes the whole entry ``(ledgerId, entryId)``; with
  ``batchIndex == i`` it excludes the messages ``0..i`` of that batch only.
* ``end`` with ``batchIndex == -1`` includes the whole entry; with ``i`` the messages ``0..i``.

``EARLIEST`` is ``(-1, -1, -1)``: before every message. ``(L, -1, -1)`` lies between ledger
``L - 1`` and ledger ``L`` (it is also the last message id of a topic that never held a message).

Offsets (what ``DataSourceStreamReader`` returns, and what ``startingOffsets`` /
``endingOffsets`` accept as JSON) map a topic partition name to a position::

    {"persistent://public/default/t-partition-0": {"ledgerId": 3, "entryId": 41, "batchIndex": -1}}

As option values, a topic may also map to ``"earliest"`` / ``"latest"``, to ``-2`` / ``-1``
(the Kafka and Pulsar connectors' codes for earliest / latest), or to the bytes of
``MessageId.serialize()`` as a JSON array of (signed or unsigned) byte values — the form Apache
Pulsar's Spark connector writes.
"""
from __future__ import annotations

import json
from typing import NamedTuple

from minipulsar.client import MessageId

from minipulsar.pipeline.errors import PulsarOptionError


class Position(NamedTuple):
    """(ledger_id, entry_id, batch_index); batch_index -1 names the whole entry."""

    ledger_id: int
    entry_id: int
    batch_index: int = -1

    @property
    def entry(self) -> tuple[int, int]:
        return (self.ledger_id, self.entry_id)

    def to_json(self) -> dict:
        return {"ledgerId": self.ledger_id, "entryId": self.entry_id, "batchIndex": self.batch_index}

    @classmethod
    def from_json(cls, value: dict) -> "Position":
        return cls(int(value["ledgerId"]), int(value["entryId"]), int(value.get("batchIndex", -1)))

    @classmethod
    def of(cls, message_id: MessageId) -> "Position":
        return cls(message_id.ledger_id(), message_id.entry_id(), message_id.batch_index())

    def message_id(self, partition: int = -1) -> MessageId:
        return MessageId(partition, self.ledger_id, self.entry_id, self.batch_index)

    @property
    def is_earliest(self) -> bool:
        return self.ledger_id < 0


EARLIEST = Position(-1, -1, -1)


def entry_slice(entry: tuple[int, int], count: int, start: Position, end: Position) -> tuple[int, int]:
    """(first, stop): the indexes first..stop-1 of the count messages of entry that lie in
    (start, end]; first >= stop when none does. A message that is not in a batch has count 1."""
    first, stop = 0, count
    if entry < start.entry or (entry == start.entry and start.batch_index < 0):
        return 0, 0
    if entry == start.entry:
        first = start.batch_index + 1
    if entry > end.entry:
        return 0, 0
    if entry == end.entry and end.batch_index >= 0:
        stop = min(count, end.batch_index + 1)
    return first, stop


def may_hold_messages(start: Position, end: Position) -> bool:
    """False when the range (start, end] surely holds no message."""
    if end.ledger_id < 0:
        return False
    if end.entry != start.entry:
        return end.entry > start.entry
    if start.batch_index < 0:
        return False
    return end.batch_index < 0 or end.batch_index > start.batch_index


def exclusive_start_before(message_id: MessageId) -> Position:
    """The start position whose range begins exactly at message_id."""
    index = message_id.batch_index()
    if index > 0:
        return Position(message_id.ledger_id(), message_id.entry_id(), index - 1)
    return Position(message_id.ledger_id(), message_id.entry_id() - 1, -1)


# ---- option values ---------------------------------------------------------------------------
LATEST = "latest"
EARLIEST_NAME = "earliest"


def parse_offsets_option(name: str, value: str) -> str | dict[str, Position | str]:
    """startingOffsets / endingOffsets: 'earliest', 'latest', or a JSON object per topic partition.

    Returns the string, or {topic partition: Position | 'earliest' | 'latest'}; raises
    PulsarOptionError naming the option when the value cannot be read.
    """
    text = value.strip()
    if text.lower() in (LATEST, EARLIEST_NAME):
        return text.lower()
    try:
        decoded = json.loads(text)
    except ValueError as exc:
        raise PulsarOptionError(f"{name}: expected 'earliest', 'latest' or a JSON object, got {value!r}") from exc
    if not isinstance(decoded, dict) or not decoded:
        raise PulsarOptionError(f"{name}: expected a non-empty JSON object of topic -> message id, got {value!r}")
    from minipulsar.client.topic_name import normalize  # topic names as the client qualifies them

    return {normalize(topic): _parse_one(name, topic, item) for topic, item in decoded.items()}


def _parse_one(name: str, topic: str, item) -> Position | str:
    if isinstance(item, str) and item.lower() in (LATEST, EARLIEST_NAME):
        return item.lower()
    if item == -2:
        return EARLIEST_NAME
    if item == -1:
        return LATEST
    if isinstance(item, dict):
        try:
            return Position.from_json(item)
        except (KeyError, TypeError, ValueError) as exc:
            raise PulsarOptionError(f"{name}: bad position for {topic}: {item!r}") from exc
    if isinstance(item, list) and all(isinstance(b, int) and -128 <= b <= 255 for b in item):
        try:
            return Position.of(MessageId.deserialize(bytes(b & 0xFF for b in item)))
        except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError
            raise PulsarOptionError(f"{name}: {topic} is not a serialized MessageId: {item!r}") from exc
    raise PulsarOptionError(f"{name}: bad value for {topic}: {item!r}")


def offsets_to_json(positions: dict[str, Position]) -> dict:
    """{topic partition: Position} -> the dict Spark checkpoints (sorted by topic)."""
    return {topic: positions[topic].to_json() for topic in sorted(positions)}


def offsets_from_json(offsets: dict) -> dict[str, Position]:
    """The inverse of offsets_to_json."""
    return {topic: Position.from_json(value) for topic, value in offsets.items()}
