"""Producers: the public Producer (producer.py), one PartitionProducer per partition
(partition_producer.py), batching and entry encoding (batch.py), partition routing (router.py)."""
from minipulsar.client.producer.producer import Producer

__all__ = ["Producer"]
