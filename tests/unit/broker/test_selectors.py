"""Sticky key hashing and the four selectors, without sockets."""
import base64

import pytest

from minipulsar.broker.errors import ConsumerAssignError
from minipulsar.broker.selectors.auto_split import AutoSplitSelector
from minipulsar.broker.selectors.consistent_hashing import ConsistentHashingSelector
from minipulsar.broker.selectors.key_failover import KeyFailoverSelector
from minipulsar.broker.selectors.sticky_ranges import StickyRangesSelector
from minipulsar.broker.sticky_key import NONE_KEY, murmur3_31, range_slot, ring_slot, sticky_key
from minipulsar.proto import PulsarApi_pb2 as api


class FakeRate:
    def __init__(self, value=0.0):
        self.value = value

    def rate(self):
        return self.value


class C:
    """A consumer as the selectors see it: a name, an id, declared ranges and a dispatch rate."""

    def __init__(self, name, ranges=(), rate=0.0, consumer_id=0):
        self.name, self.consumer_id, self.hash_ranges = name, consumer_id, list(ranges)
        self.dispatch_rate = FakeRate(rate)

    def __repr__(self):
        return self.name


@pytest.mark.parametrize("key,murmur,range_s,ring_s", [
    (b"", 0, 1, 1),
    (b"a", 1009084850, 27058, 42456),
    (b"hello", 613153351, 64071, 7892),
    (b"key-1", 414258592, 5536, 11858),
    (b"NONE_KEY", 504741539, 48803, 56505),
])
def test_hash_vectors_match_pulsar(key, murmur, range_s, ring_s):
    assert murmur3_31(key) == murmur
    assert range_slot(murmur) == range_s
    assert ring_slot(murmur) == ring_s


def test_sticky_key_precedence():
    md = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=0)
    assert sticky_key(md) == NONE_KEY
    md.partition_key = "pk"
    assert sticky_key(md) == b"pk"
    md.partition_key = base64.b64encode(b"\x00\x01").decode()
    md.partition_key_b64_encoded = True
    assert sticky_key(md) == b"\x00\x01"
    md.ordering_key = b"ok"
    assert sticky_key(md) == b"ok"


def test_auto_split_halves_the_biggest_range():
    s = AutoSplitSelector()
    c1, c2, c3 = C("c1"), C("c2"), C("c3")
    s.add_consumer(c1)
    assert s.consumer_ranges() == {c1: [(0, 65535)]}
    s.add_consumer(c2)
    assert s.consumer_ranges() == {c2: [(0, 32768)], c1: [(32769, 65535)]}
    s.add_consumer(c3)  # tie between the halves: the lower one is split, c3 takes its lower half
    assert s.consumer_ranges() == {c3: [(0, 16384)], c2: [(16385, 32768)], c1: [(32769, 65535)]}
    assert s.select(100) is c3 and s.select(20000) is c2 and s.select(65535) is c1
    s.remove_consumer(c1)  # the top range moves to the consumer below it
    assert s.consumer_ranges() == {c3: [(0, 16384)], c2: [(16385, 65535)]}
    s.remove_consumer(c3)
    assert s.consumer_ranges() == {c2: [(0, 65535)]}


def test_consistent_hashing_is_stable_and_spreads():
    s = ConsistentHashingSelector(100)
    consumers = [C(f"c{i}") for i in range(4)]
    for c in consumers:
        s.add_consumer(c)
    keys = [f"key-{i}".encode() for i in range(2000)]
    before = {k: s.select(s.slot(murmur3_31(k))) for k in keys}
    share = {c: sum(1 for v in before.values() if v is c) for c in consumers}
    assert all(200 < n < 900 for n in share.values()), share
    extra = C("c4")
    s.add_consumer(extra)
    after = {k: s.select(s.slot(murmur3_31(k))) for k in keys}
    moved = [k for k in keys if after[k] is not before[k]]
    assert moved and all(after[k] is extra for k in moved)  # only keys taken by the newcomer move
    s.remove_consumer(extra)
    assert {k: s.select(s.slot(murmur3_31(k))) for k in keys} == before
    ranges = s.consumer_ranges()
    covered = sorted(r for rs in ranges.values() for r in rs)
    assert covered[0][0] == 1 and covered[-1][1] == 65535
    assert all(a[1] + 1 == b[0] for a, b in zip(covered, covered[1:]))


def test_consistent_hashing_consumers_sharing_a_name_get_distinct_points():
    s = ConsistentHashingSelector(50)
    a, b = C("same"), C("same")
    s.add_consumer(a)
    s.add_consumer(b)
    owners = {s.select(slot) for slot in range(1, 65536, 97)}
    assert owners == {a, b}


def test_sticky_ranges_reject_conflicts_and_empty_declarations():
    s = StickyRangesSelector()
    c1 = C("c1", [(0, 100), (200, 300)], consumer_id=1)
    s.add_consumer(c1)
    with pytest.raises(ConsumerAssignError, match="Range conflict with consumer c1"):
        s.add_consumer(C("c2", [(250, 400)], consumer_id=2))
    with pytest.raises(ConsumerAssignError, match="must not be empty"):
        s.add_consumer(C("c3", []))
    with pytest.raises(ConsumerAssignError, match="within"):
        s.add_consumer(C("c4", [(65000, 70000)]))
    c5 = C("c5", [(101, 199)])
    s.add_consumer(c5)
    assert s.select(50) is c1 and s.select(150) is c5 and s.select(250) is c1
    assert s.select(301) is None  # nobody covers it: its entries wait
    s.remove_consumer(c1)
    assert s.select(50) is None and s.select(150) is c5


def test_key_failover_follows_the_proposal_timeline():
    s = KeyFailoverSelector()
    c1, c2, c3 = C("C1"), C("C2"), C("C3")
    s.add_consumer(c1)
    assert s.consumer_ranges() == {c1: [(0, 65535)]}
    s.add_consumer(c2)
    assert s.consumer_ranges() == {c1: [(0, 32767)], c2: [(32768, 65535)]}
    c1.dispatch_rate.value, c2.dispatch_rate.value = 10.0, 50.0  # C2 is busier
    s.add_consumer(c3)
    assert s.consumer_ranges() == {c1: [(0, 32767)], c2: [(32768, 49151)], c3: [(49152, 65535)]}
    s.remove_consumer(c1)  # its only neighbour, C2, takes [0, 0.5)
    assert s.consumer_ranges() == {c2: [(0, 49151)], c3: [(49152, 65535)]}
    s.remove_consumer(c2)
    assert s.consumer_ranges() == {c3: [(0, 65535)]}


def test_key_failover_leaving_range_goes_to_the_less_busy_neighbour():
    s = KeyFailoverSelector()
    a, b, c = C("a", rate=5.0), C("b", rate=100.0), C("c", rate=1.0)
    s.add_consumer(a)
    s.add_consumer(b)      # a is the only one: b takes a's upper half
    s.add_consumer(c)      # b is busiest: c takes b's upper half
    assert s.consumer_ranges() == {a: [(0, 32767)], b: [(32768, 49151)], c: [(49152, 65535)]}
    s.remove_consumer(b)   # neighbours a (5/s) and c (1/s): c is less busy
    assert s.consumer_ranges() == {a: [(0, 32767)], c: [(32768, 65535)]}
