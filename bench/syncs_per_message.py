"""What a message costs in writes and syncs: the broker's system calls counted by strace while the
official client publishes, minipulsar only (fsync on).

    python bench/syncs_per_message.py                       # 1 and 1,000 topics, 50,000 messages each
    python bench/syncs_per_message.py --topics 1000 --messages 100000

For each topic count a fresh broker runs; strace is attached to it once its topics have
producers, while bench/many_topics.py's throughput run (unbatched, one producer per topic,
round-robin) sends the messages, and counts the synced writes (`pwritev2` with RWF_DSYNC: the
journal's group writes), the other writes (`pwritev2` / `pwritev`: the segments written behind
the journal, and the zeros the journal writes ahead of its records, a MiB each), `fdatasync` (one
per MiB of zeros, and a checkpoint's) and `fsync`. Prints each count and its count per message;
strace slows the broker, so the rate printed is not a throughput figure.
A checkpoint (every flushInterval, 10 s) falls in the window only when the run is long enough: its
syncs are one fdatasync per segment written and one fsync per folder changed since the last one.
"""
from __future__ import annotations

import argparse
import contextlib
import re
import shlex
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import many_topics  # noqa: E402  (bench/ is not a package)
from perf_compare import minipulsar, stop_brokers_on_sigterm  # noqa: E402
from tools.strace_attach import attach_strace  # noqa: E402

CALLS = ("pwritev2", "pwritev", "fdatasync", "fsync")
KINDS = ("synced writes", "other writes", "fdatasync", "fsync")


@contextlib.contextmanager
def strace_counts(pid: int, counts: dict[str, int]):
    """strace -f attached to pid for the body; fills counts {kind: calls} (KINDS) when it ends."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        tracer = attach_strace(pid, ["-f", "-s", "0", "-e", "trace=" + ",".join(CALLS), "-o", out.name])
        try:
            yield
        finally:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(30)
        counts.update(classify(out))


def classify(lines) -> dict[str, int]:
    """{kind: calls} from strace's lines ("<tid> <call>(...) = <result>", or split in an
    "<unfinished ...>" line and a "resumed" one, counted once at its start: the flags come before
    the cut). Not tools/crashstates/strace_parse: it decodes every argument, so strace would have to
    print whole writes (a round behind the journal is up to 16 MB); the name and flags are enough."""
    counts = dict.fromkeys(KINDS, 0)
    for line in lines:
        match = re.match(r"\d+\s+(\w+)\(", line)
        if match is None or match.group(1) not in CALLS:
            continue
        call = match.group(1)
        if call in ("fdatasync", "fsync"):
            counts[call] += 1
        else:
            counts["synced writes" if "RWF_DSYNC" in line else "other writes"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[1, 1000])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--window", type=int, default=10_000, help="messages in flight at most")
    args = parser.parse_args()
    stop_brokers_on_sigterm()
    args.batched, args.partitions = False, 0
    print("$ python bench/syncs_per_message.py " + shlex.join(sys.argv[1:]), flush=True)
    for count in args.topics:
        args.current_topics = count
        with tempfile.TemporaryDirectory() as workdir, minipulsar(False, args, workdir) as url:
            counts: dict[str, int] = {}
            figures = many_topics.throughput(url, args, lambda: strace_counts(url.pid, counts))
        sent = args.messages - figures["failed"]
        print(f"topics={count} messages={sent} (rate under strace {figures['rate']:,.0f} msg/s)  " + "  ".join(
            f"{kind} {n} ({n / sent:.4f}/msg)" for kind, n in counts.items()), flush=True)


if __name__ == "__main__":
    main()
