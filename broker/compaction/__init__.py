"""Topic compaction: a compacted view of a persistent topic that keeps the latest message of each
key (Pulsar's topic compaction, read by read_compacted consumers and readers)."""
from minipulsar.broker.compaction.topic_compaction import COMPACTION_CURSOR, TopicCompaction

__all__ = ["COMPACTION_CURSOR", "TopicCompaction"]
