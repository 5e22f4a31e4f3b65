"""`minipulsar admin functions ...`: pulsar-admin's CmdFunctions over /admin/v3/functions.

    create | update  [FunctionConfig flags, minipulsar.cli.admin.function_config] --py FILE|URL
    delete | get | status | stats | start | stop | restart   (--fqfn F | --tenant T --namespace N --name X)
                                                             [--instance-id I] (status, stats, start, stop, restart)
    list [--tenant T --namespace N]
    trigger  ... (--trigger-value V | --trigger-file F) [--topic T]
    querystate ... -k KEY [-w]        putstate ... -s '{"key": ..., "stringValue": ...}'
    localrun [FunctionConfig flags] --py FILE [--broker-service-url URL] [--client-auth-plugin C
             --client-auth-params P] [--tls-trust-cert-path CA] [--instance-id-offset N]
             [--state-storage-service-url file:///DIR]

Output is pulsar-admin's: "Created successfully", "Updated successfully", "Deleted successfully",
"Started successfully", "Stopped successfully", "Restarted successfully"; get, status, stats and
querystate print JSON; list one name a line; trigger the output it produced. --py with a file:,
http: or https: URL sends it for the worker to read (createFunctionWithUrl), a path uploads the
file. querystate -w polls once a second until interrupted. localrun runs the function here
(`python -m minipulsar.functions.localrun`), against --broker-service-url, until Ctrl-C.
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import aiohttp

from minipulsar.cli.admin.args import add_verb, segment
from minipulsar.cli.admin.function_config import (add_config_flags, add_identity_flags, function_config,
                                                  infer_identity, package_source)
from minipulsar.cli.admin.http import AdminError, show
from minipulsar.cli.runtime import UsageError

FUNCTIONS = "/admin/v3/functions"
QUERY_WATCH_SECONDS = 1.0


def add_verbs(verbs) -> None:
    add_config_flags(add_verb(verbs, "create", create, "Create a Pulsar Function in cluster mode (deploy it on a "
                                                       "Pulsar cluster)"))
    p = add_verb(verbs, "update", update, "Update a Pulsar Function that has been deployed to a Pulsar cluster")
    add_config_flags(p)
    p.add_argument("--update-auth-data", action="store_true", help="Whether or not to update the auth data")
    for name, action, help in (("delete", delete, "Delete a Pulsar Function that is running on a Pulsar cluster"),
                               ("get", get, "Fetch information about a Pulsar Function")):
        add_identity_flags(add_verb(verbs, name, action, help))
    for name, action, help in (("status", status, "Check the current status of a Pulsar Function"),
                               ("stats", stats, "Get the current stats of a Pulsar Function"),
                               ("start", start, "Starts a stopped function instance"),
                               ("stop", stop, "Stops function instance"),
                               ("restart", restart, "Restart function instance")):
        p = add_verb(verbs, name, action, help)
        add_identity_flags(p)
        p.add_argument("--instance-id", help="The function instanceId (all instances if not provided)")
    p = add_verb(verbs, "list", list_functions, "List all Pulsar Functions running under a specific tenant and "
                                                "namespace")
    p.add_argument("--tenant", default="public", help="The tenant of a Pulsar Function")
    p.add_argument("--namespace", default="default", help="The namespace of a Pulsar Function")
    p = add_verb(verbs, "trigger", trigger, "Trigger the specified Pulsar Function with a supplied value")
    add_identity_flags(p)
    p.add_argument("--trigger-value", "--triggerValue", dest="trigger_value", help="The value to trigger it with")
    p.add_argument("--trigger-file", "--triggerFile", dest="trigger_file", help="A file holding the value")
    p.add_argument("--topic", help="The input topic to send the value to (its full name)")
    p = add_verb(verbs, "querystate", querystate, "Fetch the current state associated with a Pulsar Function")
    add_identity_flags(p)
    p.add_argument("-k", "--key", help="Key name of State")
    p.add_argument("-w", "--watch", action="store_true", help="Watch for changes in the value of the key")
    p = add_verb(verbs, "putstate", putstate, "Put the state associated with a Pulsar Function")
    add_identity_flags(p)
    p.add_argument("-s", "--state", required=True, help="The FunctionState that needs to be put (JSON)")
    p = add_verb(verbs, "localrun", localrun, "Run a Pulsar Function locally, rather than deploy to a Pulsar cluster")
    add_config_flags(p)
    p.add_argument("--broker-service-url", "--brokerServiceUrl", dest="broker_service_url",
                   default="pulsar://127.0.0.1:6650", help="The URL for Pulsar broker")
    p.add_argument("--client-auth-plugin", "--clientAuthPlugin", dest="client_auth_plugin", default="",
                   help="Client authentication plugin the instances connect with")
    p.add_argument("--client-auth-params", "--clientAuthParams", dest="client_auth_params", default="",
                   help="Client authentication param")
    p.add_argument("--tls-trust-cert-path", dest="tls_trust_cert_path", default="", help="tls trust cert file path")
    p.add_argument("--instance-id-offset", type=int, default=0, help="Start the instanceIds from this offset")
    p.add_argument("--state-storage-service-url", help="Where the function's state lives: a file: URL or a "
                                                       "folder (default: a temporary folder)")


# ---- names and paths ---------------------------------------------------------------------------
def _function_path(args) -> str:
    """/admin/v3/functions/{tenant}/{namespace}/{name}, with Pulsar's FQFN rules."""
    if args.fqfn is not None:
        if any(v is not None for v in (args.tenant, args.namespace, args.name)):
            raise UsageError("You must specify either a Fully Qualified Function Name (FQFN) or tenant, namespace, "
                             "and function name")
        parts = args.fqfn.split("/")
        if len(parts) != 3:
            raise UsageError("Fully qualified function names (FQFNs) must be of the form tenant/namespace/name")
        tenant, namespace, name = parts
    else:
        if args.name is None:
            raise UsageError("You must specify a name for the function or a Fully Qualified Function Name (FQFN)")
        tenant, namespace, name = args.tenant or "public", args.namespace or "default", args.name
    return f"{FUNCTIONS}/{segment(tenant)}/{segment(namespace)}/{segment(name)}"


def _instance_path(args) -> str:
    path = _function_path(args)
    if args.instance_id is None:
        return path
    if not args.instance_id.isdigit():
        raise UsageError("instance-id must be a number")
    return f"{path}/{args.instance_id}"


# ---- multipart bodies --------------------------------------------------------------------------
def multipart(*fields: tuple[str, str | bytes, str | None, str]) -> aiohttp.MultipartWriter:
    """A multipart/form-data body of (name, value, file name or None, content type) fields, the
    form Pulsar's REST endpoints read (always multipart, even without a file)."""
    writer = aiohttp.MultipartWriter("form-data")
    for name, value, file_name, content_type in fields:
        part = writer.append(value, {"Content-Type": content_type})
        part.set_content_disposition("form-data", name=name, **({"filename": file_name} if file_name else {}))
    return writer


# ---- create and update -------------------------------------------------------------------------
def _form(config: dict, upload: str | None, url: str | None) -> aiohttp.MultipartWriter:
    fields = []
    if upload is not None:
        try:
            fields.append(("data", Path(upload).read_bytes(), Path(upload).name, "application/octet-stream"))
        except OSError as exc:
            raise UsageError(f"cannot read {upload}: {exc.strerror or exc}") from None
    if url is not None:
        fields.append(("url", url, None, "text/plain"))
    fields.append(("functionConfig", json.dumps(config), None, "application/json"))
    return multipart(*fields)


async def create(client, args) -> None:
    config = function_config(args)
    infer_identity(config, require_class=True)
    upload, url = package_source(config, required=True)
    path = f"{FUNCTIONS}/{segment(config['tenant'])}/{segment(config['namespace'])}/{segment(config['name'])}"
    await client.post(path, _form(config, upload, url))
    print("Created successfully")


async def update(client, args) -> None:
    config = function_config(args)
    infer_identity(config, require_class=False)
    upload, url = package_source(config, required=False)
    path = f"{FUNCTIONS}/{segment(config['tenant'])}/{segment(config['namespace'])}/{segment(config['name'])}"
    await client.put(path, _form(config, upload, url))
    print("Updated successfully")


# ---- the rest ----------------------------------------------------------------------------------
async def delete(client, args) -> None:
    await client.delete(_function_path(args))
    print("Deleted successfully")


async def get(client, args) -> None:
    show(await client.get(_function_path(args)))


async def status(client, args) -> None:
    show(await client.get(_instance_path(args) + "/status"))


async def stats(client, args) -> None:
    show(await client.get(_instance_path(args) + "/stats"))


async def start(client, args) -> None:
    await client.post(_instance_path(args) + "/start")
    print("Started successfully")


async def stop(client, args) -> None:
    await client.post(_instance_path(args) + "/stop")
    print("Stopped successfully")


async def restart(client, args) -> None:
    await client.post(_instance_path(args) + "/restart")
    print("Restarted successfully")


async def list_functions(client, args) -> None:
    show(await client.get(f"{FUNCTIONS}/{segment(args.tenant)}/{segment(args.namespace)}"))


async def trigger(client, args) -> None:
    if args.trigger_value is None and args.trigger_file is None:
        raise UsageError("Either a trigger value or a trigger filepath needs to be specified")
    if args.trigger_file is not None:
        try:
            fields = [("dataStream", Path(args.trigger_file).read_bytes(), Path(args.trigger_file).name,
                       "application/octet-stream")]
        except OSError as exc:
            raise UsageError(f"cannot read {args.trigger_file}: {exc.strerror or exc}") from None
    else:
        fields = [("data", args.trigger_value, None, "text/plain")]
    if args.topic is not None:
        fields.append(("topic", args.topic, None, "text/plain"))
    result = await client.post(_function_path(args) + "/trigger", multipart(*fields))
    print(result if result is not None else "null")


async def querystate(client, args) -> None:
    if not args.key:
        raise UsageError("State key needs to be specified")
    path = f"{_function_path(args)}/state/{segment(args.key)}"
    while True:
        try:
            show(await client.get(path))
        except AdminError as exc:
            if not args.watch or "(HTTP 404)" not in str(exc):
                raise
            print(exc, file=sys.stderr)
        if not args.watch:
            return
        await asyncio.sleep(QUERY_WATCH_SECONDS)  # -w polls, as pulsar-admin's querystate --watch


async def putstate(client, args) -> None:
    try:
        state = json.loads(args.state)
    except ValueError as exc:
        raise UsageError(f"--state is not valid JSON: {exc}") from None
    if not isinstance(state, dict) or not state.get("key"):
        raise UsageError("--state must be a FunctionState JSON object with its key")
    await client.post(f"{_function_path(args)}/state/{segment(str(state['key']))}",
                      multipart(("state", json.dumps(state), None, "application/json")))


async def localrun(client, args) -> int:
    config = function_config(args)
    infer_identity(config, require_class=True)
    upload, url = package_source(config, required=True)
    if upload is None:
        raise UsageError("localrun runs a local file: --py must be a path")
    command = [sys.executable, "-m", "minipulsar.functions.localrun", "--function-config", json.dumps(config),
               "--py", upload, "--broker-service-url", args.broker_service_url,
               "--instance-id-offset", str(args.instance_id_offset), "--client-auth-plugin", args.client_auth_plugin,
               "--client-auth-params", args.client_auth_params, "--tls-trust-cert-path", args.tls_trust_cert_path]
    if args.state_storage_service_url:
        state = args.state_storage_service_url
        command += ["--state-dir", unquote(urlparse(state).path) if state.startswith("file:") else state]
    process = await asyncio.create_subprocess_exec(*command)
    try:
        return await process.wait()
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM: the instances stop cleanly, then this returns
        if process.returncode is None:
            process.terminate()
            await process.wait()
        raise
