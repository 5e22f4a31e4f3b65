"""`minipulsar admin schemas ...`: Pulsar's CmdSchemas over /admin/v2/schemas/{tenant}/{namespace}/{topic}.

    get TOPIC [-v VERSION | -a]   upload TOPIC -f FILE   delete TOPIC [-f]   test-compatibility TOPIC -f FILE

FILE holds a PostSchemaPayload: {"type": "AVRO", "schema": "<definition>", "properties": {...}}.
get prints the schema (GetSchemaResponse) as JSON, -a every version; test-compatibility prints the
IsCompatibilityResponse (pulsar-admin prints nothing).
"""
from __future__ import annotations

import json

from minipulsar.cli.admin.args import add_verb, segment, topic_parts, with_topic
from minipulsar.cli.admin.http import AdminError, show


def add_verbs(verbs) -> None:
    p = with_topic(add_verb(verbs, "get", get_schema, "Get the schema for a topic"))
    which = p.add_mutually_exclusive_group()
    which.add_argument("-v", "--version", type=int, help="version")
    which.add_argument("-a", "--all-version", dest="all_versions", action="store_true", help="all version")
    p = with_topic(add_verb(verbs, "upload", upload_schema, "Update the schema for a topic"))
    p.add_argument("-f", "--filename", required=True, help="file holding the PostSchemaPayload JSON")
    p = with_topic(add_verb(verbs, "delete", delete_schema, "Delete all versions schema of a topic"))
    p.add_argument("-f", "--force", action="store_true",
                   help="delete the versions outright, instead of marking the schema deleted")
    p = with_topic(add_verb(verbs, "test-compatibility", test_compatibility, "Test schema compatibility",
                            aliases=("compatibility",)))
    p.add_argument("-f", "--filename", required=True, help="file holding the PostSchemaPayload JSON")


def _path(topic: str) -> str:
    _, tenant, namespace, local = topic_parts(topic)
    return "/admin/v2/schemas/" + "/".join(segment(part) for part in (tenant, namespace, local))


def _payload(filename: str):
    try:
        with open(filename, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise AdminError(f"cannot read {filename}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise AdminError(f"{filename} is not a JSON PostSchemaPayload: {exc}") from exc


async def get_schema(client, args) -> None:
    if args.all_versions:
        show((await client.get(_path(args.topic) + "/schemas"))["getSchemaResponses"])
    elif args.version is not None:
        show(await client.get(f"{_path(args.topic)}/schema/{args.version}"))
    else:
        show(await client.get(_path(args.topic) + "/schema"))


async def upload_schema(client, args) -> None:
    await client.post(_path(args.topic) + "/schema", _payload(args.filename))


async def delete_schema(client, args) -> None:
    await client.delete(_path(args.topic) + "/schema", force=args.force or None)


async def test_compatibility(client, args) -> None:
    show(await client.post(_path(args.topic) + "/compatibility", _payload(args.filename)))
