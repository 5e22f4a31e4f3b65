"""`minipulsar client produce|consume`: Pulsar's pulsar-client tool (PulsarClientTool, CmdProduce,
CmdConsume) over the bundled asyncio client, with Pulsar's flag names, defaults and output.

    minipulsar client [--url pulsar://127.0.0.1:6650] [--auth-plugin CLASS --auth-params PARAMS]
                      produce TOPIC -m MSG [-m MSG] [-n N] [-r RATE] [-k KEY]
    minipulsar client consume TOPIC -s SUB [-n 1] [-t Exclusive] [-p Latest] [-r RATE]

produce prints 'N messages successfully produced'; consume prints '----- got message -----' and
'key:[K], properties:[k=v], content:TEXT' per message, then 'N messages successfully consumed'.
A failure (broker unreachable, topic refused) prints one line on stderr and exits with status 1.
"""
from __future__ import annotations

import argparse
import asyncio
import logging

from minipulsar import client
from minipulsar.cli.admin.auth import add_auth_arguments, add_client_tls_arguments, client_connection_options
from minipulsar.cli.runtime import (RateLimiter, UsageError, configure_logging, non_negative_int, positive_float,
                                    positive_int, run_verb)

log = logging.getLogger(__name__)

DEFAULT_URL = "pulsar://127.0.0.1:6650"
MESSAGE_BOUNDARY = "----- got message -----"
SUBSCRIPTION_TYPES = {
    "Exclusive": client.ConsumerType.Exclusive,
    "Shared": client.ConsumerType.Shared,
    "Failover": client.ConsumerType.Failover,
    "Key_Shared": client.ConsumerType.KeyShared,
    "Key_Failover": client.ConsumerType.KeyFailover,  # minipulsar's SubType 4
}
POSITIONS = {"Latest": client.InitialPosition.Latest, "Earliest": client.InitialPosition.Earliest}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `client` (with its verbs produce and consume) on the root parser's sub-commands."""
    group = subparsers.add_parser("client", help="produce or consume messages (as pulsar-client)",
                                  description="Produce and consume messages, as Pulsar's pulsar-client tool.")
    group.add_argument("--url", default=DEFAULT_URL, help=f"broker service URL (default {DEFAULT_URL})")
    group.add_argument("--listener-name", help="advertised listener to look topics up on")
    add_auth_arguments(group)  # --auth-plugin / --auth-params, as pulsar-client
    add_client_tls_arguments(group)
    group.add_argument("--operation-timeout", type=positive_float, default=30.0, metavar="SECONDS",
                       help="bound on lookups and on creating the producer/consumer (default 30; "
                            "minipulsar extension, Pulsar reads it from client.conf)")
    group.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR (default WARNING)")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    _add_produce(verbs)
    _add_consume(verbs)
    return group


def _add_produce(verbs) -> None:
    p = verbs.add_parser("produce", help="produce messages to a topic",
                         description="Produce messages to a specified topic (as pulsar-client produce).")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("-m", "--messages", action="append", default=[],
                   help="messages to send, split on --separator; repeatable. Either -m or -f is required")
    p.add_argument("-f", "--files", action="append", default=[],
                   help="comma-separated files whose bytes are sent, one message per file; repeatable")
    p.add_argument("-s", "--separator", default=",", help="string -m values are split on (default ,)")
    p.add_argument("-n", "--num-produce", type=positive_int, default=1,
                   help="number of times the message(s) are sent (default 1)")
    p.add_argument("-r", "--rate", type=float, default=0.0,
                   help="msg/s at which to produce; 0 = as fast as possible (default 0)")
    p.add_argument("-k", "--key", help="message key (partition key) to add")
    p.add_argument("-p", "--properties", action="append", default=[],
                   help="properties to add, comma-separated key=value (k1=v1,k2=v2); repeatable")
    p.add_argument("-db", "--disable-batching", action="store_true", help="disable batch sending of messages")
    p.set_defaults(run=run_produce)


def _add_consume(verbs) -> None:
    c = verbs.add_parser("consume", help="consume messages from a topic",
                         description="Consume messages from a specified topic (as pulsar-client consume).")
    c.add_argument("topic", metavar="TOPIC")
    c.add_argument("-s", "--subscription-name", required=True, help="subscription name (required)")
    c.add_argument("-n", "--num-messages", type=non_negative_int, default=1,
                   help="number of messages to consume; 0 = consume forever (default 1)")
    c.add_argument("-t", "--subscription-type", choices=list(SUBSCRIPTION_TYPES), default="Exclusive",
                   help="subscription type (default Exclusive)")
    c.add_argument("-p", "--subscription-position", choices=list(POSITIONS), default="Latest",
                   help="where a new subscription starts (default Latest)")
    c.add_argument("-r", "--rate", type=float, default=0.0,
                   help="msg/s at which to consume; 0 = as fast as possible (default 0)")
    c.add_argument("-q", "--queue-size", type=non_negative_int, default=0,
                   help="consumer receiver queue size; 0 = the client's default (1000)")
    c.add_argument("--hide-content", action="store_true",
                   help="do not print messages; print a count every 1000 messages instead")
    c.set_defaults(run=run_consume)


# ---- produce -------------------------------------------------------------------------------

def run_produce(args: argparse.Namespace) -> int:
    """The `client produce` verb: 0 once every message has its receipt, 1 on a failure, 2 on bad flags."""
    configure_logging(args.log_level, quiet_asyncio=True)
    return run_verb("client produce", lambda: produce(args))


async def produce(args: argparse.Namespace) -> int:
    """Send every body --num-produce times, in order; print how many the broker confirmed.

    Raises UsageError (no -m/-f, a property without '='), OSError (unreadable -f file), or the
    client's PulsarException (broker unreachable, producer refused, a send that failed)."""
    bodies = message_bodies(args.messages, args.files, args.separator)
    properties = parse_properties(args.properties)
    limiter = RateLimiter(args.rate)
    sent = 0
    try:
        async with _client(args) as c:
            producer = await c.create_producer(args.topic, batching_enabled=not args.disable_batching,
                                               batching_max_publish_delay_ms=1, block_if_queue_full=True)
            receipts = []
            for _ in range(args.num_produce):
                for body in bodies:
                    await limiter.acquire()
                    receipts.append(await producer.send_async(body, properties=properties, partition_key=args.key))
            await producer.flush()
            for receipt in receipts:
                await receipt
                sent += 1
    finally:
        print(f"{sent} messages successfully produced", flush=True)
    return 0


def message_bodies(messages: list[str], files: list[str], separator: str) -> list[bytes]:
    """The payloads: each -m value split on separator (UTF-8), then each file's bytes.
    Raises UsageError if there are none, OSError if a file cannot be read."""
    bodies = [part.encode() for value in messages for part in value.split(separator)]
    for value in files:
        for path in filter(None, value.split(",")):
            with open(path, "rb") as f:
                bodies.append(f.read())
    if not bodies:
        raise UsageError("Please supply message content with either --messages or --files")
    return bodies


def parse_properties(values: list[str]) -> dict[str, str] | None:
    """'k1=v1,k2=v2' strings to a dict (None when empty); raises UsageError on a pair without '='."""
    properties = {}
    for value in values:
        for pair in filter(None, value.split(",")):
            key, sep, val = pair.partition("=")
            if not sep:
                raise UsageError(f"property {pair!r} is not key=value")
            properties[key] = val
    return properties or None


# ---- consume -------------------------------------------------------------------------------

def run_consume(args: argparse.Namespace) -> int:
    """The `client consume` verb: 0 after --num-messages (or Ctrl-C), 1 on a failure."""
    configure_logging(args.log_level, quiet_asyncio=True)
    return run_verb("client consume", lambda: consume(args))


async def consume(args: argparse.Namespace) -> int:
    """Receive, print and acknowledge --num-messages messages (0 = until Ctrl-C); the count
    consumed is printed at the end. Raises the client's PulsarException on a failure."""
    limiter = RateLimiter(args.rate)
    consumed = 0
    try:
        async with _client(args) as c:
            consumer = await c.subscribe(args.topic, args.subscription_name,
                                         consumer_type=SUBSCRIPTION_TYPES[args.subscription_type],
                                         initial_position=POSITIONS[args.subscription_position],
                                         **({"receiver_queue_size": args.queue_size} if args.queue_size else {}))
            while args.num_messages == 0 or consumed < args.num_messages:
                await limiter.acquire()
                message = await consumer.receive()
                consumed += 1
                _show(message, consumed, args.hide_content)
                await consumer.acknowledge(message)
    except asyncio.CancelledError:  # Ctrl-C is how `-n 0` ends
        log.info("interrupted")
    finally:
        print(f"{consumed} messages successfully consumed", flush=True)
    return 0


def _show(message, consumed: int, hide_content: bool) -> None:
    if not hide_content:
        print(MESSAGE_BOUNDARY)
        print(format_message(message), flush=True)
    elif consumed % 1000 == 0:
        print(f"Received {consumed} messages", flush=True)


def format_message(message) -> str:
    """'key:[K], properties:[k=v, ...], content:TEXT', as pulsar-client prints a message
    (K is 'null' without a key; TEXT is the payload decoded as UTF-8)."""
    key = message.partition_key() or "null"
    properties = ", ".join(f"{k}={v}" for k, v in message.properties().items())
    content = message.data().decode("utf-8", errors="replace")
    return f"key:[{key}], properties:[{properties}], content:{content}"


# ---- shared --------------------------------------------------------------------------------

def _client(args: argparse.Namespace) -> client.Client:
    return client.Client(args.url, operation_timeout_seconds=args.operation_timeout, listener_name=args.listener_name,
                         **client_connection_options(args))

