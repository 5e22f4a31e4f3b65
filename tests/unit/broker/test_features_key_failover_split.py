"""Key_Failover selector: a busy consumer halved down to a single slot does not block later joins
(found by the Key_Shared state machine: 18 consumers joining while one consumer is busy)."""
from __future__ import annotations

from minipulsar.broker.consumer import DecayingRate
from minipulsar.broker.selectors.key_failover import KeyFailoverSelector
from minipulsar.broker.sticky_key import RANGE_SIZE


class _Consumer:
    def __init__(self, busy: bool):
        self.dispatch_rate = DecayingRate()
        if busy:
            self.dispatch_rate.record(1000)


def test_joins_keep_working_after_the_busiest_range_is_one_slot():
    selector = KeyFailoverSelector()
    busy = _Consumer(busy=True)
    selector.add_consumer(busy)
    others = [_Consumer(busy=False) for _ in range(40)]
    for consumer in others:
        selector.add_consumer(consumer)  # the 17th join used to raise ConsumerAssignError
    ranges = selector.consumer_ranges()
    assert len(ranges) == 41
    covered = sorted(r for rs in ranges.values() for r in rs)
    assert covered[0][0] == 0 and covered[-1][1] == RANGE_SIZE - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(covered, covered[1:]))  # contiguous, no overlap
    assert ranges[busy] == [(0, 0)]
