"""Frame codec of the Pulsar binary protocol.

Simple frame:  [totalSize u32][commandSize u32][BaseCommand]
Payload frame: [totalSize u32][commandSize u32][BaseCommand][headers and payload]
where headers and payload = [magic 0x0e01 u16][crc32c u32][metadataSize u32][MessageMetadata][payload]
(the magic/crc pair is optional). All integers are big-endian. The CRC32C covers everything from
metadataSize to the end of the payload. Source: PulsarApi / Commands.java serializeWithSize,
the C++ client's Commands.cc.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import crc32c as _crc32c
from google.protobuf.message import DecodeError

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError, FrameTooLargeError
from minipulsar.proto.hot_commands import SEND_PREFIX, SendCommand, parse_send

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Pulsar maxMessageSize
FRAME_PADDING = 10 * 1024  # Commands.MESSAGE_SIZE_FRAME_PADDING

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_TWO_U32 = struct.Struct(">II")
_MAGIC_AND_CRC = struct.Struct(">HI")
_MAGIC_CRC_AND_SIZE = struct.Struct(">HII")


def crc32c(data: bytes | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of data, chained from value; crc32c(b"123456789") == 0xE3069283."""
    return _crc32c.crc32c(data, value)


@dataclass(slots=True)
class Frame:
    """One decoded frame: the command, and for SEND/MESSAGE the bytes after it, exactly as received."""

    command: api.BaseCommand
    headers_and_payload: bytes | None = None


class SendFrame(NamedTuple):
    """A plain SEND decoded by hand (SendFastPathDecoder): its fields and the bytes after it."""

    send: SendCommand
    headers_and_payload: bytes


_make_send_frame = partial(tuple.__new__, SendFrame)  # from a (send, rest) pair, no Python __new__


def encode_command(command: api.BaseCommand) -> bytes:
    """A simple frame carrying command; raises EncodeError if a required field is missing."""
    body = command.SerializeToString()
    return _TWO_U32.pack(len(body) + 4, len(body)) + body


def encode_payload_command(command: api.BaseCommand, headers_and_payload: bytes) -> bytes:
    """A payload frame: command followed by already-built [magic][crc][metadataSize][metadata][payload]."""
    body = command.SerializeToString()
    return b"".join(
        (_TWO_U32.pack(4 + len(body) + len(headers_and_payload), len(body)), body, headers_and_payload)
    )


def build_headers_and_payload(metadata: api.MessageMetadata | bytes, payload: bytes) -> bytes:
    """[0x0e01][crc32c][metadataSize][metadata][payload] for metadata (message or serialized bytes)."""
    meta = metadata if isinstance(metadata, bytes) else metadata.SerializeToString()
    checked = _U32.pack(len(meta)) + meta
    checksum = crc32c(payload, crc32c(checked))
    return b"".join((_MAGIC_AND_CRC.pack(MAGIC_CRC32C, checksum), checked, payload))


@dataclass(slots=True)
class ParsedPayload:
    """The pieces of [magic][crc][metadataSize][metadata][payload].

    checksum is None when the sender left the magic/crc pair out.
    metadata_offset/payload_offset index into the original buffer.
    """

    checksum: int | None
    checked_offset: int
    metadata_offset: int
    metadata_size: int
    payload_offset: int


def split_headers_and_payload(buf: bytes | memoryview) -> ParsedPayload:
    """Locate checksum, metadata and payload in buf; raises FrameError on impossible sizes.

    A broker-entry-metadata block (0x0e02) in front is skipped, as the C++ reader does.
    """
    offset = 0
    if len(buf) >= 6 and _U16.unpack_from(buf, 0)[0] == MAGIC_BROKER_ENTRY_METADATA:
        offset = 6 + _U32.unpack_from(buf, 2)[0]
    checksum = None
    if len(buf) >= offset + 6 and _U16.unpack_from(buf, offset)[0] == MAGIC_CRC32C:
        checksum = _U32.unpack_from(buf, offset + 2)[0]
        offset += 6
    if len(buf) < offset + 4:
        raise FrameError("payload frame too short for its metadata size field")
    metadata_size = _U32.unpack_from(buf, offset)[0]
    payload_offset = offset + 4 + metadata_size
    if payload_offset > len(buf):
        raise FrameError(f"metadata size {metadata_size} exceeds the frame")
    return ParsedPayload(checksum, offset, offset + 4, metadata_size, payload_offset)


def verify_checksum(buf: bytes | memoryview, parsed: ParsedPayload | None = None) -> bool:
    """True when buf carries no checksum or its CRC32C matches; the covered bytes start at metadataSize.
    Raises FrameError where split_headers_and_payload does."""
    if parsed is None and len(buf) >= 10:  # the usual [0x0e01][crc][metadataSize]..., read in one go
        magic, checksum, metadata_size = _MAGIC_CRC_AND_SIZE.unpack_from(buf, 0)
        if magic == MAGIC_CRC32C:
            if 10 + metadata_size > len(buf):
                raise FrameError(f"metadata size {metadata_size} exceeds the frame")
            return crc32c(memoryview(buf)[6:]) == checksum
    parsed = parsed or split_headers_and_payload(buf)
    if parsed.checksum is None:
        return True
    return crc32c(memoryview(buf)[parsed.checked_offset :]) == parsed.checksum


def parse_metadata(buf: bytes | memoryview, parsed: ParsedPayload | None = None) -> api.MessageMetadata:
    """The MessageMetadata of a stored entry or payload frame; raises FrameError when it does not parse."""
    parsed = parsed or split_headers_and_payload(buf)
    metadata = api.MessageMetadata()
    try:
        metadata.ParseFromString(bytes(buf[parsed.metadata_offset : parsed.payload_offset]))
    except DecodeError as exc:
        raise FrameError(f"unparsable MessageMetadata: {exc}") from exc
    return metadata


class FrameDecoder:
    """Incremental decoder: feed() bytes as they arrive, take whole frames out.

    max_frame_size bounds totalSize (maxMessageSize + FRAME_PADDING). Raises FrameTooLargeError or
    FrameError; after an error the stream is unusable and the connection must be closed.
    Only SEND and MESSAGE frames carry headers_and_payload.
    """

    _PAYLOAD_TYPES = frozenset((api.BaseCommand.SEND, api.BaseCommand.MESSAGE))

    def __init__(self, max_frame_size: int = DEFAULT_MAX_MESSAGE_SIZE + FRAME_PADDING):
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> list[Frame]:
        """Append data and return every frame now complete, in order."""
        self._buf += data
        frames = []
        while True:
            frame = self._next_frame()
            if frame is None:
                break
            frames.append(frame)
        if self._pos:
            # Compact once per feed, not once per frame: frames are often many and small.
            del self._buf[: self._pos]
            self._pos = 0
        return frames

    def _next_frame(self) -> Frame | None:
        available = len(self._buf) - self._pos
        if available < 4:
            return None
        total = _U32.unpack_from(self._buf, self._pos)[0]
        if total > self.max_frame_size:
            raise FrameTooLargeError(f"frame of {total} bytes exceeds the limit of {self.max_frame_size}")
        if total < 4:
            raise FrameError(f"frame size {total} is smaller than its command size field")
        if available < 4 + total:
            return None
        start = self._pos + 4
        self._pos = start + total
        return self._decode(memoryview(self._buf)[start : start + total])

    def _decode(self, body: memoryview) -> Frame:
        try:
            command_size = _U32.unpack_from(body, 0)[0]
            if command_size > len(body) - 4:
                raise FrameError(f"command size {command_size} exceeds frame size {len(body)}")
            command = api.BaseCommand()
            command.ParseFromString(bytes(body[4 : 4 + command_size]))
            if not command.IsInitialized():
                # upb parses proto2 messages that lack required fields; the protocol forbids them.
                raise FrameError(f"command lacks required fields: {command.FindInitializationErrors()}")
            rest = bytes(body[4 + command_size :]) if command.type in self._PAYLOAD_TYPES else None
            return Frame(command, rest)
        except DecodeError as exc:
            raise FrameError(f"unparsable command: {exc}") from exc
        finally:
            body.release()


class SendFastPathDecoder(FrameDecoder):
    """FrameDecoder with a fast path for SEND (the broker's decoder): a plain SEND comes out as a
    SendFrame read by hand (hot_commands.parse_send), without a protobuf BaseCommand (its parse,
    required-field check and field reads were a quarter of the event loop's time per unbatched
    message); every other frame, and any SEND that parser leaves to protobuf, comes out as a Frame
    exactly as FrameDecoder's.
    """

    def _decode(self, body: memoryview) -> Frame | SendFrame:
        if len(body) > 7 and body[4:7] == SEND_PREFIX:
            command_size = _U32.unpack_from(body, 0)[0]
            send = parse_send(body[4 : 4 + command_size].tobytes()) if command_size <= len(body) - 4 else None
            if send is not None:
                rest = body[4 + command_size :].tobytes()
                body.release()
                return _make_send_frame((send, rest))
        return super()._decode(body)
