"""Bounded fuzz runs against a real broker on a loopback socket (properties: tests/fuzz/harness.py).

Each test starts its own broker with a temporary data dir, runs a fixed number of hypothesis
examples through real sockets, then checks the bystanders once more and stops the broker.
`python bench/fuzz.py --minutes N` runs the same properties for longer.
"""
import pytest

from tests.fuzz import strategies
from tests.fuzz.harness import MAX_FRAME, FuzzTarget, run_sessions

# Sized so the four tests add under two minutes to CI on a 2-core machine (about 27, 19, 20 and 120
# sessions a second, mostly waiting on fsync); bench/fuzz.py runs the same properties for longer.
EXAMPLES = {"commands": 1200, "payloads": 800, "pairs": 400, "raw": 500}


@pytest.fixture
def target(tmp_path):
    target = FuzzTarget(tmp_path / "data")
    yield target
    target.close()


def _run(target, strategy, examples: int) -> None:
    ran = run_sessions(target, strategy, examples)
    assert ran >= examples // 2, f"hypothesis ran only {ran} examples"
    assert target.finish() >= 1, "the official bystander made no round trip"


def test_mutated_commands_of_every_routed_type(target):
    """Every command the broker routes (and a few it does not), with random fields, mutated on
    the wire: truncated, bytes flipped, sizes that lie, oversize, trailing bytes."""
    _run(target, strategies.sessions(MAX_FRAME), EXAMPLES["commands"])


def test_send_frames_with_random_metadata_and_payloads(target):
    """SEND (with PRODUCER, SUBSCRIBE, FLOW, ACK, SEEK, REDELIVER around it): random metadata
    (markers, chunks, batches, delays, keys, compression), payloads, checksums good, bad or absent."""
    Type = strategies.Type
    types = (Type.SEND, Type.SEND, Type.SEND, Type.ACK, Type.FLOW, Type.SEEK,
             Type.REDELIVER_UNACKNOWLEDGED_MESSAGES, Type.GET_LAST_MESSAGE_ID, Type.CONSUMER_STATS)
    _run(target, strategies.sessions(MAX_FRAME, types=types, max_frames=8), EXAMPLES["payloads"])


def test_two_connections_at_once(target):
    """Two fuzzed connections whose frames interleave, on the same topics, subscriptions and ids."""
    _run(target, strategies.pair_sessions(MAX_FRAME), EXAMPLES["pairs"])


def test_arbitrary_bytes(target):
    """Arbitrary bytes, before and after CONNECT."""
    _run(target, strategies.raw_sessions(), EXAMPLES["raw"])
