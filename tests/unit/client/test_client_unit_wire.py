"""Unit tests (no sockets) of the client's wire pieces against the official client and Apache
Pulsar's binary protocol."""
import pulsar
import pytest

from minipulsar.client.consumer.acks import AckGroupingTracker, BatchAcker
from minipulsar.client.consumer.payload import CorruptEntry, decode_entry
from minipulsar.client.hashing import boost_hash, java_string_hash, partition_for_key
from minipulsar.client.message_id import MessageId
from minipulsar.client.options import CompressionType, ConsumerKeySharedPolicy, HashingScheme, KeySharedMode
from minipulsar.client.producer.batch import PendingMessage, build_batch, build_single
from minipulsar.client.exceptions import InvalidConfiguration
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import FrameDecoder, build_headers_and_payload, split_headers_and_payload

IDS = [(-1, 5, 7, -1), (2, 5, 7, 3), (0, 0, 0, -1), (11, 1 << 40, 123456, 999), (-1, 3, 4, 0)]


@pytest.mark.parametrize("partition,ledger,entry,batch", IDS)
def test_message_id_serialize_is_byte_identical_to_official(partition, ledger, entry, batch):
    ours = MessageId(partition, ledger, entry, batch)
    theirs = pulsar.MessageId(partition, ledger, entry, batch)
    assert ours.serialize() == theirs.serialize()
    back = pulsar.MessageId.deserialize(ours.serialize())
    assert (back.partition(), back.ledger_id(), back.entry_id(), back.batch_index()) == (partition, ledger, entry, batch)
    mine = MessageId.deserialize(theirs.serialize())
    assert (mine.partition(), mine.ledger_id(), mine.entry_id(), mine.batch_index()) == (partition, ledger, entry, batch)


def test_earliest_and_latest_serialize_like_official():
    assert MessageId.earliest.serialize() == pulsar.MessageId.earliest.serialize()
    assert MessageId.latest.serialize() == pulsar.MessageId.latest.serialize()
    assert MessageId.deserialize(pulsar.MessageId.earliest.serialize()) == MessageId.earliest


def test_message_id_ordering():
    assert MessageId(-1, 1, 2) < MessageId(-1, 1, 3) < MessageId(-1, 2, 0)
    assert MessageId(-1, 1, 2, 0) < MessageId(-1, 1, 2, 1)
    assert sorted([MessageId(-1, 3, 0), MessageId(-1, 1, 9)])[0] == MessageId(-1, 1, 9)


# Partitions the official client (BoostHash, 7 partitions) chose for these keys on a live broker.
OFFICIAL_ROUTES = {"a": 4, "hello": 5, "key-1": 2, "abcdefgh": 5, "abcdefghijk": 0, "xyz": 5,
                   "0123456789abcdefghij": 3, "k12": 0}


@pytest.mark.parametrize("key,partition", sorted(OFFICIAL_ROUTES.items()))
def test_key_routing_matches_official_client(key, partition):
    assert partition_for_key(key, 7) == partition


def test_boost_hash_is_64_bit():
    assert 0 <= boost_hash(b"hello") < 1 << 64
    assert boost_hash(b"hello") != boost_hash(b"hellp")


def test_java_hashing_schemes():
    # Java: "hello".hashCode() == 99162322, "polygenelubricants".hashCode() == Integer.MIN_VALUE;
    # "\u00e9\ud83d\ude00" hashes its UTF-16 code units (a surrogate pair counts twice).
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert java_string_hash("\u00e9\U0001f600") == (233 * 31 + 0xD83D) * 31 + 0xDE00
    assert partition_for_key("polygenelubricants", 7, HashingScheme.JavaStringHash) == 0  # masked to 31 bits
    # MurmurHash3 x86 32-bit, seed 0, of the UTF-8 bytes: "hello" is 0x248bfa47
    assert partition_for_key("hello", 1 << 30, HashingScheme.Murmur3_32Hash) == 0x248BFA47 % (1 << 30)


def test_compression_type_mirrors_the_protocol_enum():
    assert {kind.name.upper(): int(kind) for kind in CompressionType} == dict(api.CompressionType.items())


def _entry_bytes(frame: bytes) -> tuple[api.BaseCommand, bytes]:
    [decoded] = FrameDecoder().feed(frame)
    return decoded.command, decoded.headers_and_payload


def _msg(payload, seq, **kw):
    m = PendingMessage(payload, None, **kw)
    m.sequence_id = seq
    return m


@pytest.mark.parametrize("kind", list(CompressionType))
def test_batch_round_trip(kind):
    messages = [_msg(f"m{i}".encode(), 10 + i, properties={"i": str(i)}, partition_key=f"k{i}",
                     ordering_key=b"ok", event_time=1000 + i) for i in range(5)]
    op = build_batch(3, "prod", messages, kind)
    command, entry = _entry_bytes(op.frame)
    assert command.send.producer_id == 3 and command.send.sequence_id == 10 and command.send.num_messages == 5
    assert (op.first_seq, op.last_seq, op.batched) == (10, 14, True)
    metadata, decoded, size = decode_entry(entry)
    assert size == 5 and metadata.num_messages_in_batch == 5 and metadata.producer_name == "prod"
    assert metadata.partition_key == "k0" and metadata.compression == kind
    assert [d.payload for d in decoded] == [f"m{i}".encode() for i in range(5)]
    assert [d.properties for d in decoded] == [{"i": str(i)} for i in range(5)]
    assert [d.partition_key for d in decoded] == [f"k{i}" for i in range(5)]
    assert [d.event_time for d in decoded] == [1000 + i for i in range(5)]
    assert [d.sequence_id for d in decoded] == [10 + i for i in range(5)]


def test_single_message_has_no_batch_field():
    op = build_single(1, "p", _msg(b"x", 0, deliver_at=12345), CompressionType.NONE)
    command, entry = _entry_bytes(op.frame)
    assert not command.send.HasField("num_messages")
    metadata, decoded, size = decode_entry(entry)
    assert size == 0 and not metadata.HasField("num_messages_in_batch")
    assert metadata.deliver_at_time == 12345 and decoded[0].payload == b"x" and decoded[0].batch_index == -1


def test_corrupt_checksum_is_reported():
    op = build_single(1, "p", _msg(b"payload", 0), CompressionType.NONE)
    _, entry = _entry_bytes(op.frame)
    broken = entry[:-1] + bytes([entry[-1] ^ 0xFF])
    with pytest.raises(CorruptEntry) as info:
        decode_entry(broken)
    assert info.value.validation_error == api.CommandAck.ChecksumMismatch


def test_broken_batch_and_compression_are_reported():
    op = build_batch(1, "p", [_msg(b"abc", 0), _msg(b"def", 1)], CompressionType.NONE)
    _, entry = _entry_bytes(op.frame)
    metadata, _, _ = decode_entry(entry)
    metadata.num_messages_in_batch = 3  # one more message than the payload holds
    short = build_headers_and_payload(metadata, entry[split_headers_and_payload(entry).payload_offset:])
    with pytest.raises(CorruptEntry) as info:
        decode_entry(short)
    assert info.value.validation_error == api.CommandAck.BatchDeSerializeError
    metadata.num_messages_in_batch = 2
    metadata.compression, metadata.uncompressed_size = api.ZLIB, 100
    with pytest.raises(CorruptEntry) as info:
        decode_entry(build_headers_and_payload(metadata, b"not zlib"))
    assert info.value.validation_error == api.CommandAck.DecompressionError


def test_batch_acker_acks_entry_when_all_indexes_are_acked():
    acker = BatchAcker()
    ids = [MessageId(-1, 1, 2, i, 3) for i in range(3)]
    assert acker.ack(ids[0]) is None
    assert acker.partial_ack_set(ids[0]) == [0b110]
    assert acker.ack(ids[2]) is None
    assert acker.ack(ids[1]) == []
    assert acker.ack(MessageId(-1, 1, 3)) == []


async def test_ack_grouping_sends_one_ack_with_many_ids():
    sent = []
    tracker = AckGroupingTracker(7, lambda cmd: sent.append(cmd) or True)
    for entry in range(5):
        tracker.add_individual(MessageId(-1, 1, entry).to_proto())
    assert sent == []
    tracker.flush()
    assert len(sent) == 1 and sent[0].ack.consumer_id == 7
    assert [m.entryId for m in sent[0].ack.message_id] == [0, 1, 2, 3, 4]


async def test_ack_grouping_keeps_acks_while_disconnected():
    connected = False
    sent = []
    tracker = AckGroupingTracker(1, lambda cmd: connected and (sent.append(cmd) or True))
    tracker.add_cumulative(MessageId(-1, 1, 5).to_proto())
    tracker.flush()
    assert sent == []
    connected = True
    tracker.flush()
    assert sent[0].ack.ack_type == api.CommandAck.Cumulative and sent[0].ack.message_id[0].entryId == 5


def test_key_shared_policy_encoding():
    meta = ConsumerKeySharedPolicy(KeySharedMode.Sticky, True, [(0, 100), (200, 65535)]).to_proto()
    assert meta.keySharedMode == api.STICKY and meta.allowOutOfOrderDelivery
    assert [(r.start, r.end) for r in meta.hashRanges] == [(0, 100), (200, 65535)]
    with pytest.raises(InvalidConfiguration):
        ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(0, 70000)])
    assert not ConsumerKeySharedPolicy().to_proto().hashRanges
