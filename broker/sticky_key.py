"""The sticky key of an entry and its hash, as Pulsar computes them for Key_Shared.

Key: ordering_key, else partition_key (base64-decoded when partition_key_b64_encoded), else the
fixed key b"NONE_KEY". A batch is keyed by its entry-level metadata, i.e. its first message.
Hash: Murmur3 x86 32-bit, seed 0, masked to 31 bits (Pulsar Murmur3_32Hash.makeHash);
each selector then maps it into its slot range. Source: Pulsar Commands.peekStickyKey,
StickyKeyConsumerSelector.makeStickyKeyHash.
"""
from __future__ import annotations

import base64
import binascii

import mmh3

from minipulsar.proto import PulsarApi_pb2 as api

NONE_KEY = b"NONE_KEY"
RANGE_SIZE = 65536  # StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE


def sticky_key(metadata: api.MessageMetadata | None) -> bytes:
    """The entry's sticky key bytes."""
    if metadata is None:
        return NONE_KEY
    if metadata.HasField("ordering_key"):
        return metadata.ordering_key
    if metadata.HasField("partition_key"):
        if metadata.partition_key_b64_encoded:
            try:
                return base64.b64decode(metadata.partition_key)
            except (binascii.Error, ValueError):
                return metadata.partition_key.encode()
        return metadata.partition_key.encode()
    return NONE_KEY


def murmur3_31(key: bytes) -> int:
    """Murmur3 x86 32-bit of key, seed 0, & 0x7fffffff: 'hello' -> 613153351."""
    return mmh3.hash(key, 0, signed=False) & 0x7FFFFFFF


def range_slot(hash31: int) -> int:
    """Slot in [0, 65535] used by the auto-split, sticky and Key_Failover selectors; 0 becomes 1
    because Pulsar 4.x reserves 0 for 'no hash' (STICKY_KEY_HASH_NOT_SET)."""
    return (hash31 % RANGE_SIZE) or 1


def ring_slot(hash31: int) -> int:
    """Slot in [1, 65535] used by the consistent-hashing ring (Pulsar 4.x, PIP-379)."""
    return hash31 % (RANGE_SIZE - 1) + 1
