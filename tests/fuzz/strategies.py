"""Hypothesis strategies that build what a hostile or broken client could send to the broker.

Commands are filled field by field from the protobuf descriptors, so every BaseCommand type and
every field of its body (and of MessageIdData, Schema, KeySharedMeta, ...) is reached without a
hand-written builder per command; SEND payloads get metadata that the broker acts on (keys,
markers with marker payloads, delays, chunks, batches with batch payloads, compression,
replication and transaction fields). Values lean towards what the broker acts on: producer and
consumer ids mostly 1 (the ids the harness's setup creates), a handful of topic and subscription
names, edge integers. A `WireFrame` is the encoded frame, possibly mutated on the wire
(truncated, bytes flipped, sizes that lie, trailing bytes, oversize sizes, a lying metadata size,
bad or missing checksums).

A `Session` is what one connection sends: half of them clean (well-framed commands only, so long
sequences reach the handlers), half mutated; barriers let earlier frames take effect before later
ones; a session may hang up without waiting for answers. A `PairSession` interleaves two.

Every value drawn here is plain data, so a failing example prints as the frames that caused it.
"""
from __future__ import annotations

import struct
import time

from google.protobuf import descriptor as pb_descriptor
from google.protobuf import message_factory, text_format
from hypothesis import strategies as st
from minipulsar.broker.handlers import ROUTES
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers
from minipulsar.proto.frames import MAGIC_CRC32C, crc32c

Type = api.BaseCommand.Type
FieldDescriptor = pb_descriptor.FieldDescriptor

# Names the fuzzer uses; bystander topics (tests/fuzz/harness.py) never match them.
FUZZ_TOPICS = (
    "persistent://public/default/fuzz-a",
    "persistent://public/default/fuzz-b",
    "fuzz-a",  # the short form of the first one
    "persistent://public/default/fuzz-p-partition-0",
    "non-persistent://public/default/fuzz-np",
)
FUZZ_SUBSCRIPTIONS = ("fuzz-sub", "fuzz-sub-2", "", "pulsar.repl.x", "pulsar.dedup")
SETUP_TOPIC = FUZZ_TOPICS[0]
SETUP_PRODUCER_ID = 1
SETUP_CONSUMER_ID = 1

ROUTED_TYPES = tuple(sorted(ROUTES))
ALL_TYPES = tuple(sorted(Type.values()))

_EDGE_INTS = (0, 1, -1, 2, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**32 - 1,
              2**63 - 1, -(2**63), 2**64 - 1)
_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1), FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1), FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_MAX_DEPTH = 3


def _ints(field_type: int, name: str) -> st.SearchStrategy[int]:
    """Integers that fit field_type, biased to small ids for *_id fields and to edge values."""
    low, high = _RANGES[field_type]
    edges = st.sampled_from([v for v in _EDGE_INTS if low <= v <= high])
    if name in ("producer_id", "consumer_id"):  # mostly the setup's producer and consumer (ids 1)
        return st.one_of(st.just(1), st.just(1), st.just(1), st.integers(0, 3), edges, st.integers(low, high))
    if name.endswith("_id") or name in ("ledgerId", "entryId", "messagePermits"):
        return st.one_of(st.integers(0, 3), edges, st.integers(low, high))
    return st.one_of(st.integers(-2, 16).filter(lambda v: low <= v <= high), edges, st.integers(low, high))


def topic_names() -> st.SearchStrategy[str]:
    """Mostly the fuzz topics; sometimes a malformed or random name."""
    return st.one_of(
        st.sampled_from(FUZZ_TOPICS),
        st.sampled_from(("", "persistent://", "persistent://a", "persistent://public/default/",
                         "http://public/default/x", "persistent://public/nope/fuzz-x",
                         "persistent://public/default/fuzz-a-partition-99999999999999999999",
                         "persistent://public/default/fuzz-a-partition--1", "persistent:///default/x",
                         "fuzz/\x00/x", "persistent://public/default/" + "x" * 300)),
        st.text(max_size=24).map(lambda s: "fuzz-" + s),
    )


def _scalar(fd: FieldDescriptor) -> st.SearchStrategy:
    """A value for one scalar (or enum) field, chosen by its type and, for strings, its name."""
    if fd.type == FieldDescriptor.TYPE_STRING:
        if fd.name == "topic":
            return topic_names()
        if fd.name == "subscription":
            return st.one_of(st.sampled_from(FUZZ_SUBSCRIPTIONS), st.text(max_size=16))
        if fd.name == "namespace":
            return st.one_of(st.sampled_from(("public/default", "public", "nope/none", "", "a/b/c")),
                             st.text(max_size=16))
        if fd.name == "topics_pattern":
            return st.one_of(st.sampled_from(("fuzz.*", "(", "*", "persistent://public/default/.*")),
                             st.text(max_size=16))
        return st.text(max_size=16)
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=24)
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if fd.type == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in fd.enum_type.values])
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if fd.type == FieldDescriptor.TYPE_FLOAT else 64)
    return _ints(fd.type, fd.name)


def _is_repeated(fd: FieldDescriptor) -> bool:
    """Whether fd is repeated (protobuf 5+ spells it is_repeated; older versions only have label)."""
    if hasattr(fd, "is_repeated"):
        return fd.is_repeated
    return fd.label == FieldDescriptor.LABEL_REPEATED


def _is_required(fd: FieldDescriptor) -> bool:
    """Whether fd is a proto2 required field."""
    if hasattr(fd, "is_required"):
        return fd.is_required
    return fd.label == FieldDescriptor.LABEL_REQUIRED


@st.composite
def fill_message(draw, message_class, depth: int = 0, clean: bool = False):
    """An instance of message_class with random fields: required ones almost always set (a frame
    without them is refused by the decoder, which is worth testing but not every time), always
    when clean."""
    message = message_class()
    keep_required = clean or draw(st.integers(0, 19)) != 0
    for fd in message_class.DESCRIPTOR.fields:
        if _is_required(fd):
            if not keep_required:
                continue
        elif draw(st.integers(0, 2)) != 0:  # optional and repeated fields: one in three
            continue
        _fill_field(draw, message, fd, depth, clean)
    return message


def _fill_field(draw, message, fd: FieldDescriptor, depth: int, clean: bool) -> None:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        if depth >= _MAX_DEPTH:
            return
        child_class = _message_class(fd.message_type)
        if _is_repeated(fd):
            for child in draw(st.lists(fill_message(child_class, depth + 1, clean), max_size=3)):
                getattr(message, fd.name).add().CopyFrom(child)
        else:
            getattr(message, fd.name).CopyFrom(draw(fill_message(child_class, depth + 1, clean)))
        return
    if _is_repeated(fd):
        getattr(message, fd.name).extend(draw(st.lists(_scalar(fd), max_size=4)))
    else:
        setattr(message, fd.name, draw(_scalar(fd)))


def _message_class(message_descriptor):
    """The generated class of a message descriptor of PulsarApi."""
    return message_factory.GetMessageClass(message_descriptor)


_BODY_FIELD = {fd.number: fd for fd in api.BaseCommand.DESCRIPTOR.fields if fd.name != "type"}


@st.composite
def commands(draw, types=ROUTED_TYPES, clean: bool = False):
    """A BaseCommand of one of types (mostly routed ones) with its body filled at random; now and
    then without its body, or with another command's body as well. A clean command is a routed
    one with its body and every required field (what a buggy but well-framed client sends)."""
    if types is ROUTED_TYPES and not clean and draw(st.integers(0, 7)) == 0:
        types = ALL_TYPES  # now and then a type the broker does not route (or only sends)
    command_type = draw(st.sampled_from(types))
    command = api.BaseCommand(type=command_type)
    fd = _BODY_FIELD.get(command_type)
    if fd is not None and (clean or draw(st.integers(0, 15)) != 0):
        getattr(command, fd.name).CopyFrom(draw(fill_message(_message_class(fd.message_type), clean=clean)))
    if draw(st.integers(0, 15)) == 0:
        other = _BODY_FIELD[draw(st.sampled_from(sorted(_BODY_FIELD)))]
        getattr(command, other.name).CopyFrom(draw(fill_message(_message_class(other.message_type), clean=clean)))
    return command


def metadata_bytes() -> st.SearchStrategy[bytes]:
    """Serialized MessageMetadata with random fields, or random bytes that may not parse at all."""
    return st.one_of(
        fill_message(api.MessageMetadata).map(lambda m: m.SerializePartialToString()),
        st.binary(max_size=32),
    )


_MARKER_TYPES = tuple(markers.MarkerType.values())
_MARKER_CLASSES = {
    markers.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST: markers.ReplicatedSubscriptionsSnapshotRequest,
    markers.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE: markers.ReplicatedSubscriptionsSnapshotResponse,
    markers.REPLICATED_SUBSCRIPTION_SNAPSHOT: markers.ReplicatedSubscriptionsSnapshot,
    markers.REPLICATED_SUBSCRIPTION_UPDATE: markers.ReplicatedSubscriptionsUpdate,
}


def _maybe(draw, strategy, default=None):
    """A value from strategy half the time, else default (None: leave the field unset)."""
    return draw(strategy) if draw(st.booleans()) else default


@st.composite
def message_parts(draw) -> tuple[bytes, bytes]:
    """(metadata, payload) of a message the broker accepts and acts on: keys, markers (with a marker
    payload or garbage), delays, chunks, batches (with a batch payload or garbage), compression,
    replication and transaction fields, each present half the time."""
    metadata = api.MessageMetadata(producer_name=draw(st.sampled_from(("fuzz", "fuzz-2", ""))),
                                   sequence_id=draw(st.integers(0, 3)), publish_time=draw(st.sampled_from(
                                       (1, int(time.time() * 1000), 2**63 - 1))))
    for name, strategy in _OPTIONAL_METADATA.items():
        value = _maybe(draw, strategy)
        if value is not None:
            setattr(metadata, name, value)
    if draw(st.booleans()):
        metadata.uuid = draw(st.sampled_from(("u1", "u2")))
        metadata.num_chunks_from_msg = draw(st.one_of(st.integers(1, 3), st.integers(-(2**31), 2**31 - 1)))
        metadata.total_chunk_msg_size = draw(st.integers(-1, 100))
        metadata.chunk_id = draw(st.one_of(st.integers(0, 3), st.integers(-(2**31), 2**31 - 1)))
    return metadata.SerializePartialToString(), draw(_payload(metadata))


_OPTIONAL_METADATA = {
    "partition_key": st.sampled_from(("k1", "k2", "", "\u00e9")),
    "ordering_key": st.sampled_from((b"o1", b"", b"\xff")),
    "marker_type": st.one_of(st.sampled_from(_MARKER_TYPES), st.integers(-(2**31), 2**31 - 1)),
    "deliver_at_time": st.one_of(st.sampled_from((0, -1, 2**63 - 1, -(2**63))),
                                 st.integers(-1000, 1500).map(lambda d: int(time.time() * 1000) + d)),
    "num_messages_in_batch": st.one_of(st.integers(0, 3), st.integers(-(2**31), 2**31 - 1)),
    "compression": st.sampled_from(list(api.CompressionType.values())),
    "uncompressed_size": st.integers(0, 2**32 - 1),
    "replicated_from": st.sampled_from(("standalone", "other", "")),
    "event_time": st.integers(0, 2**64 - 1),
    "txnid_least_bits": st.integers(0, 2), "txnid_most_bits": st.integers(0, 2),
    "null_value": st.booleans(),
    "schema_version": st.binary(max_size=8),
}


@st.composite
def _payload(draw, metadata: api.MessageMetadata) -> bytes:
    """The payload for metadata: a marker message, a batch, or random bytes."""
    if metadata.HasField("marker_type") and metadata.marker_type in _MARKER_CLASSES and draw(st.booleans()):
        return draw(fill_message(_MARKER_CLASSES[metadata.marker_type])).SerializePartialToString()
    if metadata.HasField("num_messages_in_batch") and draw(st.booleans()):
        singles = draw(st.lists(fill_message(api.SingleMessageMetadata), max_size=3))
        parts = []
        for single in singles:
            body = draw(st.binary(max_size=8))
            if draw(st.integers(0, 3)):
                single.payload_size = len(body)
            raw = single.SerializePartialToString()
            parts.append(struct.pack(">I", len(raw)) + raw + body)
        return b"".join(parts)
    return draw(st.binary(max_size=64))


def headers_and_payload(metadata: bytes, payload: bytes, checksum: str) -> bytes:
    """[magic][crc][metadataSize][metadata][payload]; checksum 'good', 'bad' or 'none' (no pair)."""
    checked = struct.pack(">I", len(metadata)) + metadata + payload
    if checksum == "none":
        return checked
    crc = crc32c(checked) ^ (0 if checksum == "good" else 0x5A5A5A5A)
    return struct.pack(">HI", MAGIC_CRC32C, crc) + checked


MUTATIONS = ("none",) * 14 + ("flip", "truncate", "truncate-resized", "total-size", "command-size",
             "append", "oversize", "metadata-size")


class WireFrame:
    """One frame as sent: what it was meant to be (for the report) and its bytes on the wire."""

    __slots__ = ("data", "what")

    def __init__(self, what: str, data: bytes):
        self.what = what
        self.data = data

    def __repr__(self) -> str:
        shown = self.data if len(self.data) <= 96 else self.data[:96] + b"..."
        return f"WireFrame({self.what}, {len(self.data)} bytes: {shown!r})"


def describe(command: api.BaseCommand) -> str:
    """One line naming the command and its fields, for a failing example's report."""
    return text_format.MessageToString(command, as_one_line=True)[:400]


def _encode(command: api.BaseCommand, payload: bytes | None) -> bytes:
    body = command.SerializePartialToString()
    rest = payload or b""
    return struct.pack(">II", 4 + len(body) + len(rest), len(body)) + body + rest


@st.composite
def payload_for(draw, command: api.BaseCommand) -> bytes | None:
    """Headers and payload for a SEND (or a MESSAGE sent the wrong way), None for other commands."""
    if command.type not in (Type.SEND, Type.MESSAGE):
        return None
    checksum = draw(st.sampled_from(("good", "good", "good", "bad", "none")))
    if draw(st.integers(0, 3)):
        metadata, payload = draw(message_parts())
    else:
        metadata, payload = draw(metadata_bytes()), draw(st.binary(max_size=64))
    return headers_and_payload(metadata, payload, checksum)


@st.composite
def mutate(draw, data: bytes, command_size: int, max_frame: int) -> tuple[str, bytes]:
    """(name of the mutation, mutated bytes) of one encoded frame."""
    kind = draw(st.sampled_from(MUTATIONS))
    buf = bytearray(data)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
    elif kind == "truncate":
        del buf[draw(st.integers(0, len(buf) - 1)):]
    elif kind == "truncate-resized":
        del buf[draw(st.integers(8, max(8, len(buf) - 1))):]
        struct.pack_into(">I", buf, 0, len(buf) - 4)
    elif kind == "total-size":
        struct.pack_into(">I", buf, 0, draw(st.one_of(st.integers(0, len(buf) + 8), st.integers(0, 2**32 - 1))))
    elif kind == "command-size":
        struct.pack_into(">I", buf, 4, draw(st.one_of(st.integers(0, len(buf) + 8), st.integers(0, 2**32 - 1))))
    elif kind == "append":
        extra = draw(st.binary(min_size=1, max_size=16))
        buf += extra
        struct.pack_into(">I", buf, 0, len(buf) - 4)
    elif kind == "oversize":
        buf = bytearray(struct.pack(">I", draw(st.integers(max_frame + 1, 2**32 - 1))) + bytes(buf[4:12]))
    elif kind == "metadata-size" and len(buf) >= 8 + command_size + 4:
        # The metadataSize field sits after the command and the optional magic/checksum pair.
        offset = 8 + command_size + (6 if buf[8 + command_size:10 + command_size] == b"\x0e\x01" else 0)
        if offset + 4 <= len(buf):
            struct.pack_into(">I", buf, offset, draw(st.integers(0, 2**32 - 1)))
    else:
        kind = "none"
    return kind, bytes(buf)


@st.composite
def wire_frames(draw, max_frame: int, types=ROUTED_TYPES, clean: bool = False):
    """One command frame, mutated on the wire or (always when clean) not."""
    command = draw(commands(types, clean))
    payload = draw(payload_for(command))
    data = _encode(command, payload)
    if clean:
        kind = "none"
    else:
        kind, data = draw(mutate(data, len(command.SerializePartialToString()), max_frame))
    extra = f" +{len(payload)}B payload" if payload is not None else ""
    return WireFrame(f"{Type.Name(command.type)} {{{describe(command)}}}{extra} [{kind}]", data)


BARRIER = WireFrame("BARRIER: wait for PONG and for the publishes to persist", b"")


@st.composite
def raw_chunks(draw):
    """Bytes that are not a frame: random, or a plausible size header followed by random bytes."""
    body = draw(st.binary(max_size=96))
    if draw(st.booleans()):
        return WireFrame("random bytes", body)
    return WireFrame("sized random bytes", struct.pack(">II", 4 + len(body), draw(st.integers(0, len(body)))) + body)


class Session:
    """What one fuzz connection does: CONNECT or not, create a producer and a consumer (with FLOW)
    on the setup topic or not, then send frames in order, and wait for the answers or hang up."""

    __slots__ = ("abrupt", "connect", "frames", "setup", "sub_type")

    def __init__(self, connect: bool, setup: bool, sub_type: int, frames: tuple[WireFrame, ...],
                 abrupt: bool = False):
        self.connect = connect
        self.setup = setup
        self.sub_type = sub_type
        self.frames = frames
        self.abrupt = abrupt  # hang up right after the last frame, with handlers still running

    def groups(self):
        """(bytes, whether a barrier follows) for the runs of frames between barriers."""
        run: list[bytes] = []
        for frame in self.frames:
            if frame is BARRIER:
                yield b"".join(run), True
                run = []
            else:
                run.append(frame.data)
        yield b"".join(run), False

    def __repr__(self) -> str:
        head = (f"Session(connect={self.connect}, setup={self.setup}, sub_type={self.sub_type}, "
                f"abrupt={self.abrupt}, frames=[")
        lines = [head]
        lines += [f"    {frame!r}," for frame in self.frames]
        return "\n".join(lines) + "\n])"


def sessions(max_frame: int, types=ROUTED_TYPES, max_frames: int = 6) -> st.SearchStrategy[Session]:
    """Sessions of commands and barriers (points where the harness waits for what was sent to take
    effect before sending more): half of them clean (every frame well-formed, so long sequences
    of commands reach the handlers), half with mutated frames and raw chunks among them."""
    return st.booleans().flatmap(lambda clean: _sessions(max_frame, types, max_frames, clean))


def _sessions(max_frame: int, types, max_frames: int, clean: bool) -> st.SearchStrategy[Session]:
    command = wire_frames(max_frame, types, clean)
    frame = st.one_of(command, command, command, command, st.just(BARRIER)) if clean else \
        st.one_of(command, command, command, raw_chunks(), st.just(BARRIER))
    return st.builds(Session, connect=st.integers(0, 15).map(bool), setup=st.integers(0, 3).map(bool),
                     sub_type=st.sampled_from(list(api.CommandSubscribe.SubType.values())),
                     frames=st.lists(frame, min_size=1, max_size=max_frames).map(tuple),
                     abrupt=st.integers(0, 3).map(lambda v: v == 0))


class PairSession:
    """Two sessions on two connections at once, their runs of frames interleaved (first's, then
    second's, ...): what one client does to the topics, subscriptions and ids another one uses."""

    __slots__ = ("sessions",)

    def __init__(self, first: Session, second: Session):
        self.sessions = (first, second)

    def __repr__(self) -> str:
        first, second = self.sessions
        return f"PairSession(\nfirst={first!r},\nsecond={second!r})"


def pair_sessions(max_frame: int) -> st.SearchStrategy[PairSession]:
    """Pairs of sessions, both connected, each clean or mutated."""
    connected = sessions(max_frame).filter(lambda s: s.connect)
    return st.builds(PairSession, connected, connected)


def raw_sessions() -> st.SearchStrategy[Session]:
    """Arbitrary bytes, with or without a CONNECT first."""
    return st.builds(Session, connect=st.booleans(), setup=st.just(False), sub_type=st.just(0),
                     frames=st.lists(st.one_of(raw_chunks(), st.binary(max_size=256).map(
                         lambda b: WireFrame("arbitrary bytes", b))), min_size=1, max_size=4).map(tuple))
