"""`minipulsar perf produce|consume`: Pulsar's pulsar-perf (PerformanceProducer,
PerformanceConsumer) over the bundled asyncio client (or, with --client official, the official
`pulsar` package), with pulsar-perf's flag names, defaults and report lines.

    minipulsar perf produce TOPIC [TOPIC...] [-r 100] [-s 1024] [-m 0] [-time 0] [-n 1] [-u URL]
    minipulsar perf consume TOPIC [TOPIC...] [-s sub] [-st Exclusive] [-n 1] [-m 0] [-time 0] [-u URL]

Every --report-interval seconds (10, as pulsar-perf) a line gives the interval's msg/s and Mbit/s
and its latencies in ms (publish latency for produce, end-to-end for consume: mean, median, 95, 99,
99.9, 99.99 percentiles and max); at the end two 'Aggregated ...' lines sum up the whole run. A
run stops by itself after --num-messages or --test-duration; Ctrl-C (or SIGTERM) stops it with
the same summary and exit status 0. Failing to connect or to create a producer or consumer
prints one line on stderr and exits with status 1.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import random
import time
from dataclasses import dataclass

from minipulsar import client as bundled_client
from minipulsar.cli import perf_official
from minipulsar.cli.admin.auth import add_auth_arguments, add_client_tls_arguments, client_connection_options
from minipulsar.cli.perf_stats import (Recorder, consume_interval_line, consume_summary_lines,
                                       produce_interval_line, produce_summary_lines)
from minipulsar.cli.runtime import (RateLimiter, UsageError, configure_logging, describe, non_negative_int,
                                    positive_float, positive_int, run_verb)
from minipulsar.proto.topic_name import full_topic_name

log = logging.getLogger(__name__)

DEFAULT_URL = "pulsar://127.0.0.1:6650"
REPORT_INTERVAL_SECONDS = 10.0
# pulsar-perf's names -> the client's enum member names
SUBSCRIPTION_TYPES = {"Exclusive": "Exclusive", "Shared": "Shared", "Failover": "Failover", "Key_Shared": "KeyShared"}
POSITIONS = {"Latest": "Latest", "Earliest": "Earliest"}
COMPRESSIONS = {"NONE": "NONE", "LZ4": "LZ4", "ZLIB": "ZLib", "ZSTD": "ZSTD", "SNAPPY": "SNAPPY"}


class InvalidTopicNameError(ValueError):
    """A TOPIC that Pulsar's TopicName refuses; run_verb prints it as one line,
    'minipulsar perf VERB: InvalidTopicNameError: reason', and the status is 1."""


# ---- command line --------------------------------------------------------------------------

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `perf` (with its verbs produce and consume) on the root parser's sub-commands."""
    group = subparsers.add_parser("perf", help="measure produce or consume throughput (as pulsar-perf)",
                                  description="Throughput and latency tests, as Pulsar's pulsar-perf.")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    common = _common_flags()
    _add_produce(verbs, common)
    _add_consume(verbs, common)
    return group


def _common_flags() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("topics", nargs="+", metavar="TOPIC", help="topic name(s), e.g. persistent://public/default/t")
    common.add_argument("-t", "--num-topics", "--num-topic", type=positive_int,
                        help="number of topics; with one TOPIC and N > 1, uses TOPIC-0 .. TOPIC-(N-1) "
                             "(default: as many as given)")
    common.add_argument("-u", "--service-url", default=DEFAULT_URL, help=f"Pulsar service URL (default {DEFAULT_URL})")
    common.add_argument("-m", "--num-messages", type=int, default=0,
                        help="messages in total over all topics; <= 0 keeps going (default 0)")
    common.add_argument("-time", "--test-duration", type=float, default=0.0,
                        help="test duration in seconds; <= 0 keeps going (default 0)")
    common.add_argument("--client", choices=("bundled", "official"), default="bundled",
                        help="bundled asyncio client, or the official pulsar-client package (default bundled)")
    common.add_argument("--report-interval", type=positive_float, default=REPORT_INTERVAL_SECONDS, metavar="SECONDS",
                        help=f"seconds between rate lines (default {REPORT_INTERVAL_SECONDS:g}, as pulsar-perf)")
    common.add_argument("--operation-timeout", type=positive_float, default=30.0, metavar="SECONDS",
                        help="bound on lookups and on creating producers/consumers (default 30)")
    common.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR (default WARNING)")
    add_auth_arguments(common)  # --auth-plugin / --auth-params, as pulsar-perf
    add_client_tls_arguments(common)
    return common


def connection_options(args: argparse.Namespace) -> dict:
    """Authentication and TLS for the bundled client; the official backend takes neither here."""
    options = client_connection_options(args)
    if args.client == "official":
        if options["authentication"] is not None or args.tls_trust_cert_path or args.tls_allow_insecure:
            raise UsageError("--auth-plugin and the TLS flags work with --client bundled (the default)")
        return {}
    return options


def _add_produce(verbs, common: argparse.ArgumentParser) -> None:
    p = verbs.add_parser("produce", parents=[common], help="test producer performance",
                         description="Test producer performance (as pulsar-perf produce).")
    p.add_argument("-r", "--rate", type=float, default=100.0,
                   help="publish rate in msg/s across topics; 0 = unthrottled (default 100)")
    p.add_argument("-s", "--size", type=non_negative_int, default=1024, help="message size in bytes (default 1024)")
    p.add_argument("-n", "--num-producers", type=positive_int, default=1, help="producers per topic (default 1)")
    p.add_argument("-o", "--max-outstanding", type=non_negative_int, default=1000,
                   help="messages awaiting their receipt, per producer; 0 = no limit (default 1000)")
    p.add_argument("-p", "--max-outstanding-across-partitions", type=non_negative_int, default=50000,
                   help="messages awaiting their receipt across partitions (default 50000)")
    p.add_argument("-db", "--disable-batching", action="store_true", help="disable batching")
    p.add_argument("-b", "--batch-time-window", type=float, default=1.0,
                   help="batch messages in a window of this many ms, rounded to whole ms (default 1)")
    p.add_argument("-bm", "--batch-max-messages", type=positive_int, default=1000,
                   help="maximum number of messages per batch (default 1000)")
    p.add_argument("-bb", "--batch-max-bytes", type=positive_int, default=4 * 1024 * 1024,
                   help="maximum number of bytes per batch (default 4194304)")
    p.add_argument("-z", "--compression", choices=list(COMPRESSIONS), default="NONE",
                   help="compress message payloads (default NONE)")
    p.add_argument("--send-timeout", type=non_negative_int, default=0,
                   help="seconds from send to receipt before a message fails; 0 = never (default 0)")
    p.add_argument("--warmup-time", type=float, default=1.0,
                   help="seconds after start during which latencies are not recorded (default 1)")
    p.add_argument("-ef", "--exit-on-failure", action="store_true",
                   help="stop at the first failed publish, with exit status 1")
    p.set_defaults(run=run_produce)


def _add_consume(verbs, common: argparse.ArgumentParser) -> None:
    c = verbs.add_parser("consume", parents=[common], help="test consumer performance",
                         description="Test consumer performance (as pulsar-perf consume).")
    c.add_argument("-s", "--subscriber-name", help="subscription name (prefix, with --num-subscriptions > 1)")
    c.add_argument("-ss", "--subscriptions", action="append",
                   help="subscriptions to consume, comma-separated (sub1,sub2); repeatable (default sub)")
    c.add_argument("-ns", "--num-subscriptions", type=positive_int, default=1,
                   help="subscriptions per topic (default 1)")
    c.add_argument("-st", "--subscription-type", choices=list(SUBSCRIPTION_TYPES), default="Exclusive",
                   help="subscription type (default Exclusive)")
    c.add_argument("-sp", "--subscription-position", choices=list(POSITIONS), default="Latest",
                   help="where a new subscription starts (default Latest)")
    c.add_argument("-n", "--num-consumers", type=positive_int, default=1,
                   help="consumers per subscription; only 1 with Exclusive (default 1)")
    c.add_argument("-r", "--rate", type=float, default=0.0,
                   help="simulate a slow consumer: msg/s over all consumers; 0 = unthrottled (default 0)")
    c.add_argument("-q", "--receiver-queue-size", type=positive_int, default=1000,
                   help="size of each consumer's receiver queue (default 1000)")
    c.add_argument("-p", "--receiver-queue-size-across-partitions", type=positive_int, default=50000,
                   help="max total receiver queue across partitions (default 50000)")
    c.add_argument("-rs", "--replicated", action="store_true", help="replicate the subscription state")
    c.add_argument("--batch-index-ack", action="store_true", help="enable batch index acknowledgment")
    c.set_defaults(run=run_consume)


def expand_topics(topics: list[str], num_topics: int | None) -> list[str]:
    """The topics to use: as given when num_topics is None or their number; one TOPIC with
    num_topics > 1 gives TOPIC-0 .. TOPIC-(n-1) (fully qualified). Raises InvalidTopicNameError when
    that TOPIC is not a topic name, UsageError when the counts disagree."""
    if num_topics is None or len(topics) == num_topics:
        return topics
    if len(topics) == 1:
        try:
            base = full_topic_name(topics[0])
        except ValueError as exc:
            raise InvalidTopicNameError(str(exc)) from None
        return [f"{base}-{i}" for i in range(num_topics)]
    raise UsageError(f"the number of topic names ({len(topics)}) must be equal to --num-topics ({num_topics})")


def subscription_names(subscriptions: list[str] | None, subscriber_name: str | None, count: int) -> list[str]:
    """The subscriptions of each topic, as pulsar-perf picks them: -ss names (default [-s or
    'sub']); one name with --num-subscriptions N > 1 gives NAME-0 .. NAME-(N-1). Raises UsageError
    when several names are given and their number is not N."""
    names = [n for value in subscriptions or [] for n in value.split(",") if n] or [subscriber_name or "sub"]
    if len(names) == count:
        return names
    if len(names) == 1:
        return [f"{subscriber_name or names[0]}-{i}" for i in range(count)]
    raise UsageError("The size of subscriptions list should be equal to --num-subscriptions")


def load_backend(name: str):
    """The client API the run uses: minipulsar.client, or the official package behind the same API."""
    return bundled_client if name == "bundled" else perf_official.load()


# ---- produce -------------------------------------------------------------------------------

def run_produce(args: argparse.Namespace) -> int:
    """The `perf produce` verb (exit status: see the module docstring)."""
    configure_logging(args.log_level, quiet_asyncio=True)
    return run_verb("perf produce", lambda: perf_produce(args))


async def perf_produce(args: argparse.Namespace) -> int:
    """Publish --size-byte messages from --num-producers producers per topic at --rate msg/s until
    --num-messages are confirmed or --test-duration has passed; print rates and latencies."""
    backend = load_backend(args.client)
    topics = expand_topics(args.topics, args.num_topics)
    recorder = Recorder()
    job = None
    try:
        async with backend.Client(args.service_url, operation_timeout_seconds=args.operation_timeout,
                                  **connection_options(args)) as c:
            options = producer_options(args, backend)
            producers = [await c.create_producer(t, **options) for t in topics for _ in range(args.num_producers)]
            say(f"Created {len(producers)} producers")
            recorder.start()
            job = ProduceJob(payload(args.size), SendBudget(args.num_messages, args.test_duration),
                             RateLimiter(args.rate), recorder, time.perf_counter() + args.warmup_time,
                             args.exit_on_failure)
            async with reporting(recorder, args.report_interval, produce_interval_line):
                await asyncio.gather(*(job.run(p) for p in producers))
    except asyncio.CancelledError:
        if not recorder.started:  # interrupted while connecting: nothing to sum up
            raise
        log.info("interrupted")
    finally:
        if recorder.started:
            for line in produce_summary_lines(recorder.total):
                say(line)
    return 1 if job is not None and job.failed_fast else 0


def producer_options(args: argparse.Namespace, backend) -> dict:
    """create_producer keyword arguments (the same names in both clients) for the flags."""
    options = dict(block_if_queue_full=True, max_pending_messages=args.max_outstanding,
                   max_pending_messages_across_partitions=args.max_outstanding_across_partitions,
                   send_timeout_millis=args.send_timeout * 1000,
                   compression_type=getattr(backend.CompressionType, COMPRESSIONS[args.compression]),
                   batching_enabled=not args.disable_batching)
    if not args.disable_batching:
        options.update(batching_max_messages=args.batch_max_messages,
                       batching_max_allowed_size_in_bytes=args.batch_max_bytes,
                       batching_max_publish_delay_ms=max(1, round(args.batch_time_window)))
    return options


def payload(size: int) -> bytes:
    """size bytes of upper-case letters, the same each run (pulsar-perf's Random(0) payload)."""
    rng = random.Random(0)
    return bytes(rng.randrange(65, 91) for _ in range(size))


class SendBudget:
    """The messages all producers of a run may still send, and until when.

    num_messages <= 0: no limit; duration <= 0 (seconds): no deadline. The deadline counts from
    construction."""

    def __init__(self, num_messages: int, duration: float):
        self._left = num_messages if num_messages > 0 else None
        self._deadline = time.perf_counter() + duration if duration > 0 else None
        self._stopped = False

    def take(self) -> bool:
        """True, and one message fewer left, if another message may be sent."""
        if self._stopped or (self._deadline is not None and time.perf_counter() >= self._deadline):
            return False
        if self._left is None:
            return True
        if self._left <= 0:
            return False
        self._left -= 1
        return True

    def stop(self) -> None:
        self._stopped = True


@dataclass
class ProduceJob:
    """What every producer task of a run shares; run(producer) is one task's send loop."""

    payload: bytes
    budget: SendBudget
    limiter: RateLimiter
    recorder: Recorder
    warmup_end: float  # time.perf_counter() before which latencies are not recorded
    exit_on_failure: bool
    failed_fast: bool = False

    async def run(self, producer) -> None:
        """Send while the budget allows, then wait for the receipts still outstanding."""
        pending: set[asyncio.Future] = set()
        while self.budget.take():
            await self.limiter.acquire()
            started = time.perf_counter()
            future = await producer.send_async(self.payload)
            pending.add(future)
            future.add_done_callback(functools.partial(self._on_receipt, started, pending))
        if pending:
            await asyncio.wait(pending)

    def _on_receipt(self, started: float, pending: set, future: asyncio.Future) -> None:
        pending.discard(future)
        if future.cancelled() or future.exception() is not None:
            self._on_failure(None if future.cancelled() else future.exception())
            return
        now = time.perf_counter()
        self.recorder.record(len(self.payload), int((now - started) * 1e6) if now >= self.warmup_end else None)

    def _on_failure(self, exc: BaseException | None) -> None:
        if not self.recorder.total.failures:
            log.warning("publish failed: %s", describe(exc) if exc else "cancelled")
        self.recorder.record_failure()
        if self.exit_on_failure:
            self.failed_fast = True
            self.budget.stop()


# ---- consume -------------------------------------------------------------------------------

def run_consume(args: argparse.Namespace) -> int:
    """The `perf consume` verb (exit status: see the module docstring)."""
    configure_logging(args.log_level, quiet_asyncio=True)
    return run_verb("perf consume", lambda: perf_consume(args))


async def perf_consume(args: argparse.Namespace) -> int:
    """Receive and acknowledge with --num-consumers consumers per subscription until
    --num-messages are received or --test-duration has passed; print rates and latencies."""
    backend = load_backend(args.client)
    topics = expand_topics(args.topics, args.num_topics)
    subscriptions = subscription_names(args.subscriptions, args.subscriber_name, args.num_subscriptions)
    if args.subscription_type == "Exclusive" and args.num_consumers > 1:
        raise UsageError("Only one consumer is allowed when subscriptionType is Exclusive")
    recorder = Recorder()
    try:
        async with backend.Client(args.service_url, operation_timeout_seconds=args.operation_timeout,
                                  **connection_options(args)) as c:
            options = subscribe_options(args, backend)
            consumers = [await c.subscribe(t, s, **options)
                         for t in topics for s in subscriptions for _ in range(args.num_consumers)]
            say(f"Start receiving from {args.num_consumers} consumers per subscription on {len(topics)} topics")
            recorder.start()
            job = ConsumeJob(RateLimiter(args.rate), recorder, args.num_messages)
            async with reporting(recorder, args.report_interval, consume_interval_line):
                await job.run_all(consumers, args.test_duration)
    except asyncio.CancelledError:
        if not recorder.started:  # interrupted while connecting: nothing to sum up
            raise
        log.info("interrupted")
    finally:
        if recorder.started:
            for line in consume_summary_lines(recorder.total):
                say(line)
    return 0


def subscribe_options(args: argparse.Namespace, backend) -> dict:
    """subscribe keyword arguments (the same names in both clients) for the flags."""
    return dict(consumer_type=getattr(backend.ConsumerType, SUBSCRIPTION_TYPES[args.subscription_type]),
                initial_position=getattr(backend.InitialPosition, POSITIONS[args.subscription_position]),
                receiver_queue_size=args.receiver_queue_size,
                max_total_receiver_queue_size_across_partitions=args.receiver_queue_size_across_partitions,
                replicate_subscription_state_enabled=args.replicated,
                batch_index_ack_enabled=args.batch_index_ack)


@dataclass
class ConsumeJob:
    """What every consumer task of a run shares; run_all drives them all."""

    limiter: RateLimiter
    recorder: Recorder
    num_messages: int  # stop once this many are received; <= 0: never

    async def run_all(self, consumers: list, duration: float) -> None:
        """Until num_messages are received, duration seconds (if > 0) pass, or a consumer fails
        (its exception is raised)."""
        tasks = [asyncio.create_task(self.run(c)) for c in consumers]
        try:
            done, _ = await asyncio.wait(tasks, timeout=duration if duration > 0 else None,
                                         return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run(self, consumer) -> None:
        """Receive, record and acknowledge; returns once the run has num_messages."""
        while True:
            message = await consumer.receive()
            latency_ms = int(time.time() * 1000) - message.publish_timestamp()
            self.recorder.record(len(message.data()), latency_ms if latency_ms >= 0 else None)
            await self.limiter.acquire()
            await consumer.acknowledge(message)
            if 0 < self.num_messages <= self.recorder.total.messages:
                return


# ---- reporting -----------------------------------------------------------------------------

def say(text: str) -> None:
    """One report line on stdout, time-stamped as pulsar-perf's log lines are."""
    now = time.time()
    print(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now % 1 * 1000):03d} {text}", flush=True)


@contextlib.asynccontextmanager
async def reporting(recorder: Recorder, interval: float, line):
    """Print line(interval window, total window) every `interval` seconds while the block runs."""
    task = asyncio.create_task(_report_every(recorder, interval, line))
    try:
        yield
    finally:
        task.cancel()


async def _report_every(recorder: Recorder, interval: float, line) -> None:
    while True:
        await asyncio.sleep(interval)
        say(line(recorder.take_interval(), recorder.total))
