"""Entries and batches: the message format that producers write, the broker stores and consumers,
compaction and the pipeline read.

An *entry* is the bytes a SEND carries after its command, stored as one ledger entry and sent back
after MESSAGE unchanged (proto.frames locates the pieces and checks the CRC)::

    [0x0e02 u16][size u32][BrokerEntryMetadata]      optional, skipped
    [0x0e01 u16][crc32c u32]                          optional; the CRC covers the rest
    [metadataSize u32][MessageMetadata][payload]

All integers are big-endian. The payload is compressed as MessageMetadata.compression says and
decompresses to MessageMetadata.uncompressed_size bytes (proto.compression).

A *batch* is an entry whose MessageMetadata has num_messages_in_batch *present* (even when it is 1).
Its decompressed payload is num_messages_in_batch repetitions of::

    [size u32][SingleMessageMetadata: size bytes][payload: SingleMessageMetadata.payload_size bytes]

A message's SingleMessageMetadata overrides the entry's properties, partition key, ordering key,
event time and sequence id; compaction marks the messages it removed compacted_out, with an empty
payload, so the survivors keep their batch indexes (and so their message ids).

A *batch-index ack set* (PIP-54: CommandAck and CommandMessage MessageIdData.ack_set) is a Java
BitSet of a batch's indexes as int64 words, bit i of a batch in bit i % 64 of word i // 64, a SET
bit meaning "not yet acknowledged"; on the wire the words are signed int64 values.

Source: Pulsar's Commands.deSerializeSingleMessageInBatch and
Commands.serializeSingleMessageInBatchWithPayload (the batch layout), RawBatchConverter.rebatchMessage
and TwoPhaseCompactor (a batch rebuilt with messages compacted out), ConsumerImpl.messageReceived
(checksum, decompression), BitSet.toLongArray / BitSetRecyclable (ack-set words).
"""
from __future__ import annotations

import struct
from itertools import repeat
from typing import Iterable, Sequence

from google.protobuf.message import DecodeError

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.compression import compress, decompress
from minipulsar.proto.errors import BatchFormatError, ChecksumMismatchError
from minipulsar.proto.frames import (build_headers_and_payload, parse_metadata, split_headers_and_payload,
                                     verify_checksum)

_U32 = struct.Struct(">I")
_parse_single = api.SingleMessageMetadata.FromString
_WORD = (1 << 64) - 1
_SIGN = 1 << 63


# ---- entries -----------------------------------------------------------------------------
def open_entry(data: bytes, verify: bool = True) -> tuple[api.MessageMetadata, bytes]:
    """(metadata, payload) of an entry, the payload decompressed (for a batch, the whole batch
    payload, for split_batch).

    verify: check the CRC32C first (an entry sent without one passes).
    Raises FrameError (impossible sizes, unparsable MessageMetadata), ChecksumMismatchError,
    CorruptPayloadError (does not decompress to uncompressed_size bytes, unknown compression),
    CodecUnavailableError (the compression's package is not installed).
    """
    parsed = split_headers_and_payload(data)
    if verify and not verify_checksum(data, parsed):
        raise ChecksumMismatchError("checksum mismatch")
    metadata = parse_metadata(data, parsed)
    payload = data[parsed.payload_offset:]
    if metadata.compression:  # NONE is 0
        payload = decompress(metadata.compression, payload, metadata.uncompressed_size)
    return metadata, payload


def build_entry(metadata: api.MessageMetadata, payload: bytes) -> bytes:
    """The entry [0x0e01][crc32c][metadataSize][metadata][payload] for an uncompressed payload:
    the payload is compressed as metadata.compression says, and metadata.uncompressed_size is set
    to len(payload) when it is compressed or already had a value (metadata is changed in place).
    Raises CodecUnavailableError, or ValueError for an unknown compression."""
    if metadata.compression or metadata.HasField("uncompressed_size"):
        metadata.uncompressed_size = len(payload)
    return build_headers_and_payload(metadata, compress(metadata.compression, payload))


def is_batch(metadata: api.MessageMetadata) -> bool:
    """True when the entry is a batch: num_messages_in_batch is present, whatever its value."""
    return metadata.HasField("num_messages_in_batch")


# ---- batches -----------------------------------------------------------------------------
def split_batch(payload: bytes, count: int, first: int = 0) -> tuple[list[api.SingleMessageMetadata], list[bytes]]:
    """The messages first..count-1 of a batch payload (decompressed) as two lists of the same
    length: their SingleMessageMetadata and their payloads. count is at most num_messages_in_batch;
    the messages before first are parsed too (their sizes lead to the rest) but not copied; bytes
    after message count-1 are ignored. Raises BatchFormatError when a size runs past the payload
    (or is negative) or a SingleMessageMetadata does not parse.

    This is the per-message hot path of every reader of batches (the client's consumer, the
    pipeline): no Python call per message but the parse, no test per message of whether it is in
    the range, and two lists rather than a pair per message, so a reader can take the payloads in
    one go (list.extend).
    """
    singles: list[api.SingleMessageMetadata] = []
    payloads: list[bytes] = []
    add_single, add_payload, unpack, parse = singles.append, payloads.append, _U32.unpack_from, _parse_single
    offset, total = 0, len(payload)
    try:
        for _ in repeat(None, min(first, count)):  # only their sizes matter: no payload is copied
            (size,) = unpack(payload, offset)
            offset += 4 + size
            offset += parse(payload[offset - size:offset]).payload_size
        if not 0 <= offset <= total:
            raise BatchFormatError(f"the first {first} messages of the batch run past its payload of {total} bytes")
        for _ in repeat(None, count - first):  # no int object per message, as range() makes past 256
            (size,) = unpack(payload, offset)
            start = offset + 4
            offset = start + size
            single = parse(payload[start:offset])
            end = offset + single.payload_size
            if not offset <= end <= total:
                raise BatchFormatError(f"message {first + len(singles)} of the batch runs past its payload "
                                       f"of {total} bytes")
            add_single(single)
            add_payload(payload[offset:end])
            offset = end
    except (struct.error, DecodeError) as exc:
        raise BatchFormatError(f"the batch does not parse at byte {offset} of {total}: {exc}") from exc
    return singles, payloads


def join_batch(singles: Iterable[api.SingleMessageMetadata], payloads: Iterable[bytes]) -> bytes:
    """The batch payload (uncompressed) of the messages singles[i] / payloads[i], in order; each
    SingleMessageMetadata's payload_size is set to its payload's length (in place)."""
    parts = []
    pack = _U32.pack
    for single, payload in zip(singles, payloads, strict=True):
        single.payload_size = len(payload)
        raw = single.SerializeToString()
        parts += (pack(len(raw)), raw, payload)
    return b"".join(parts)


# ---- batch-index ack sets ----------------------------------------------------------------
def ack_set_words(indexes: Iterable[int], batch_size: int) -> list[int]:
    """The ack set with the bits of indexes set (messages not yet acknowledged), as signed int64
    words; (batch_size + 63) // 64 words, trailing zero words included."""
    words = [0] * ((batch_size + 63) // 64)
    for index in indexes:
        words[index >> 6] |= 1 << (index & 63)
    return signed_words(words)


def acked_indexes(words: Sequence[int], batch_size: int) -> set[int]:
    """The indexes 0..batch_size-1 whose bit is clear in an ack set (signed or unsigned words):
    the messages already acknowledged. Indexes past the last word count as clear."""
    acked = set()
    for index in range(batch_size):
        word = index >> 6
        if word >= len(words) or not (words[word] >> (index & 63)) & 1:
            acked.add(index)
    return acked


def unsigned_words(words: Iterable[int]) -> list[int]:
    """Ack-set words as unsigned 64-bit values (wire words are signed int64)."""
    return [word & _WORD for word in words]


def signed_words(words: Iterable[int]) -> list[int]:
    """Ack-set words as signed int64 values, as CommandMessage and CommandAck carry them."""
    return [word - (1 << 64) if word >= _SIGN else word for word in words]
