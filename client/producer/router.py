"""Which partition a message goes to, as the official client decides.

Keyed messages (non-empty partition_key): hash(key) % partitions with the producer's hashing scheme
(BoostHash unless asked otherwise; client.hashing).
Others: RoundRobinDistribution cycles the partitions — one message at a time without batching, and
with batching it stays on a partition for a whole batch window (batching_max_messages messages or
batching_max_publish_delay_ms) so batches fill up; UseSinglePartition picks one random partition
for the producer's life. Source: Pulsar's C++ RoundRobinMessageRouter and SinglePartitionMessageRouter.
"""
from __future__ import annotations

import random
import time

from minipulsar.client.hashing import partition_for_key
from minipulsar.client.options import HashingScheme, PartitionsRoutingMode


class Router:
    def __init__(self, mode: PartitionsRoutingMode, num_partitions: int, batching: bool,
                 batch_max_messages: int, batch_delay_ms: int, hashing_scheme: HashingScheme = HashingScheme.BoostHash):
        self.mode = mode
        self.hashing_scheme = hashing_scheme
        self.num_partitions = num_partitions
        self.batching = batching
        self.batch_max_messages = max(1, batch_max_messages)
        self.batch_delay = batch_delay_ms / 1000.0
        self._single = random.randrange(num_partitions)
        self._cursor = random.randrange(num_partitions)
        self._in_window = 0
        self._window_start = time.monotonic()

    def choose(self, partition_key: str | None) -> int:
        if partition_key:
            return partition_for_key(partition_key, self.num_partitions, self.hashing_scheme)
        if self.mode == PartitionsRoutingMode.UseSinglePartition:
            return self._single
        if not self.batching:
            self._cursor = (self._cursor + 1) % self.num_partitions
            return self._cursor
        now = time.monotonic()
        if self._in_window >= self.batch_max_messages or now - self._window_start >= self.batch_delay:
            self._cursor = (self._cursor + 1) % self.num_partitions
            self._in_window = 0
            self._window_start = now
        self._in_window += 1
        return self._cursor
