"""Consumers: the public Consumer (consumer.py) over one PartitionConsumer per partition
(partition_consumer.py), the receiver queue, payload decoding, acks, redelivery timers and the
dead-letter producer."""
from minipulsar.client.consumer.consumer import Consumer

__all__ = ["Consumer"]
