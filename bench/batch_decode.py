"""Decoding one 1,000-message batch entry: the per-message hot paths of the bundled client's
consumer (client.consumer.payload.decode_entry) and of the pipeline's reader
(pipeline.entry_decoder.open_entry + add_rows), no sockets.

    python bench/batch_decode.py                 # 1,000 messages of 100 B, best of 7 x 200 decodes
    python bench/batch_decode.py --messages 100 --size 1024 --number 1000

Prints CPU microseconds per entry and nanoseconds per message (best of --repeat; CPU time, so that
other processes on the machine disturb it less), for a batch whose messages carry only a payload
("plain") and one whose messages carry a partition key, an event time and a property ("keyed").
"""
from __future__ import annotations

import argparse
import time
import timeit

from minipulsar.client.consumer.payload import decode_entry
from minipulsar.client.options import CompressionType
from minipulsar.client.producer.batch import PendingMessage, build_batch
from minipulsar.pipeline.columns import ColumnBuffer
from minipulsar.pipeline.entry_decoder import add_rows, open_entry
from minipulsar.proto.frames import FrameDecoder


def batch_entry(messages: int, size: int, keyed: bool) -> bytes:
    """The stored bytes ([magic][crc][metadataSize][metadata][payload]) of one batch entry."""
    pending = []
    for i in range(messages):
        extra = {"partition_key": f"key-{i % 100}", "event_time": 1_700_000_000_000 + i,
                 "properties": {"n": str(i)}} if keyed else {}
        msg = PendingMessage(b"x" * size, None, **extra)
        msg.sequence_id = i
        pending.append(msg)
    op = build_batch(1, "bench", pending, CompressionType.NONE)
    [frame] = FrameDecoder().feed(op.frame)
    return frame.headers_and_payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--number", type=int, default=200, help="decodes per timing")
    parser.add_argument("--repeat", type=int, default=7, help="timings; the best is printed")
    args = parser.parse_args()

    for label, keyed in (("plain", False), ("keyed", True)):
        entry = batch_entry(args.messages, args.size, keyed)

        def client() -> None:
            decode_entry(entry)

        def pipeline() -> None:
            metadata, payload = open_entry(entry)
            add_rows(ColumnBuffer("t"), metadata, payload, 1, 2, -1, 0, args.messages)

        for name, fn in (("client decode_entry", client), ("pipeline open_entry+add_rows", pipeline)):
            best = min(timeit.repeat(fn, timer=time.process_time, number=args.number, repeat=args.repeat)) / args.number
            print(f"{label:5} {name:30} {best * 1e6:9.1f} us/entry {best * 1e9 / args.messages:7.0f} ns/message")


if __name__ == "__main__":
    main()
