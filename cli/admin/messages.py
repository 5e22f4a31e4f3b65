"""`minipulsar admin topics last-message-id|get-message-by-id|examine-message`: Pulsar's CmdTopics
message verbs over .../lastMessageId, .../ledger/{l}/entry/{e} and .../examinemessage.

    last-message-id TOPIC                              (the MessageId JSON)
    get-message-by-id TOPIC -l LEDGER -e ENTRY         examine-message TOPIC [-i latest|earliest] [-m N]

A message prints as pulsar-admin prints one: 'Message ID: l:e' ('Batch Message ID: l:e:0' for
a batch, whose first message is shown, as PulsarAdmin's client does), 'Publish time: ms', 'Event
time: ms', the properties as JSON, then the payload as Netty's prettyHexDump draws it. The
metadata comes from the answer's X-Pulsar-* headers.
"""
from __future__ import annotations

from datetime import datetime, timezone

from minipulsar.cli.admin.args import add_verb, topic_path, with_topic
from minipulsar.cli.admin.http import show
from minipulsar.proto.entries import split_batch

PROPERTY_PREFIX = "X-Pulsar-PROPERTY-"


def add_verbs(verbs) -> None:
    with_topic(add_verb(verbs, "last-message-id", last_message_id, "Get the last commit message id of topic"))
    p = with_topic(add_verb(verbs, "get-message-by-id", message_by_id, "Get message by its ledgerId and entryId"))
    p.add_argument("-l", "--ledgerId", dest="ledger_id", type=int, required=True,
                   help="ledger id pointing to the desired ledger")
    p.add_argument("-e", "--entryId", dest="entry_id", type=int, required=True,
                   help="entry id pointing to the desired entry")
    p = with_topic(add_verb(verbs, "examine-message", examine_message,
                            "Examine a specific message on a topic by position relative to the earliest or the "
                            "latest message"))
    p.add_argument("-i", "--initialPosition", dest="initial_position", choices=("latest", "earliest"),
                   default="latest", help="Relative start position to examine message (default latest)")
    p.add_argument("-m", "--messagePosition", dest="message_position", type=int, default=1,
                   help="The position of messages (default 1)")


async def last_message_id(client, args) -> None:
    show(await client.get(topic_path(args.topic) + "/lastMessageId"))


async def message_by_id(client, args) -> None:
    answer = await client.send("GET", f"{topic_path(args.topic)}/ledger/{args.ledger_id}/entry/{args.entry_id}")
    print_message(answer.headers, answer.body, redelivery_count=True)


async def examine_message(client, args) -> None:
    answer = await client.send("GET", topic_path(args.topic) + "/examinemessage",
                               params={"initialPosition": args.initial_position,
                                       "messagePosition": args.message_position})
    print_message(answer.headers, answer.body, redelivery_count=False)


def print_message(headers, payload: bytes, redelivery_count: bool) -> None:
    message_id = headers.get("X-Pulsar-Message-ID", "")
    properties = {name[len(PROPERTY_PREFIX):]: value for name, value in headers.items()
                  if name.lower().startswith(PROPERTY_PREFIX.lower())}
    event_time = _millis(headers.get("X-Pulsar-event-time"))
    batch_size = headers.get("X-Pulsar-num-batch-message")
    if batch_size is not None:
        [single], [payload] = split_batch(payload, 1)  # the REST answer's payload is decompressed
        properties = {kv.key: kv.value for kv in single.properties}
        event_time = single.event_time or event_time
        print(f"Batch Message ID: {message_id}:0")
    else:
        print(f"Message ID: {message_id}")
    print(f"Publish time: {_millis(headers.get('X-Pulsar-publish-time'))}")
    print(f"Event time: {event_time}")
    if redelivery_count:
        print("Redelivery count: 0")
    if properties:
        print("Properties:")
        show(properties)
    print(pretty_hex_dump(bytes(payload)))


def _millis(date: str | None) -> int:
    """Milliseconds since the epoch of Pulsar's DateFormatter text (0 when absent or unreadable)."""
    if not date:
        return 0
    try:
        parsed = datetime.strptime(date.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return 0
    return int(parsed.astimezone(timezone.utc).timestamp() * 1000 + 0.5)


def pretty_hex_dump(data: bytes) -> str:
    """Netty's ByteBufUtil.prettyHexDump: 16 bytes a row, offset, hex and printable ASCII."""
    if not data:
        return ""
    rows = ["         +-------------------------------------------------+",
            "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |",
            "+--------+-------------------------------------------------+----------------+"]
    for offset in range(0, len(data), 16):
        chunk = data[offset:offset + 16]
        hexes = "".join(f" {b:02x}" for b in chunk).ljust(48)
        text = "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in chunk).ljust(16)
        rows.append(f"|{offset:08x}|{hexes} |{text}|")
    rows.append("+--------+-------------------------------------------------+----------------+")
    return "\n".join(rows)
