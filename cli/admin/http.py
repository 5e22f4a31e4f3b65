"""How `minipulsar admin` talks to the web service and prints its answers, as pulsar-admin does.

AdminClient sends each request with aiohttp's client (one session per command) to --admin-url,
with the headers of its authentication plugin (a token as `Authorization: Bearer`) and, for an
https:// URL, the plugin's client certificate (AuthenticationTls) and the trusted CAs.
A 2xx answer is returned as parsed JSON (text when the server answers text, None when it answers
no body). Any other answer raises AdminError carrying the server's {"reason": ...} and the status;
an unreachable server raises AdminError naming the URL and the OS error, never a traceback.

show() prints a value as pulsar-admin's CliCommand.print does: a string as it is, a list item by
item (one per line), anything else as JSON in the layout of Jackson's default pretty printer
(`"key" : value`, `[ { ... } ]`, `{ }`), so scripts that read pulsar-admin's output read ours.
"""
from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp

from minipulsar.cli.runtime import describe
from minipulsar.client.auth import Authentication, AuthenticationTLS

DEFAULT_ADMIN_URL = "http://127.0.0.1:8080"
NO_BODY = object()  # a request without a body (distinct from a JSON null)


class AdminError(Exception):
    """A request that failed: the server's reason (with its HTTP status), or why the server could
    not be reached. The message is the one line the command prints."""


@dataclass(frozen=True)
class Answer:
    """A successful answer: status, headers (case-insensitive) and the raw body."""

    status: int
    headers: Any
    body: bytes


class AdminClient:
    """The admin REST API at `url` (scheme, host and port, as --admin-url); use as `async with`."""

    def __init__(self, url: str, timeout_seconds: float, authentication: Authentication | None = None,
                 tls_trust_cert_path: str | None = None, tls_allow_insecure: bool = False):
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.authentication = authentication or Authentication()
        self._ssl = (tls_context(self.authentication, tls_trust_cert_path, tls_allow_insecure)
                     if self.url.startswith("https://") else None)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> "AdminClient":
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_seconds),
                                              connector=aiohttp.TCPConnector(ssl=self._ssl) if self._ssl else None)
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._session.close()

    async def get(self, path: str, **params: Any) -> Any:
        return await self.call("GET", path, params=params)

    async def put(self, path: str, body: Any = NO_BODY, **params: Any) -> Any:
        return await self.call("PUT", path, body, params)

    async def post(self, path: str, body: Any = NO_BODY, **params: Any) -> Any:
        return await self.call("POST", path, body, params)

    async def delete(self, path: str, **params: Any) -> Any:
        return await self.call("DELETE", path, params=params)

    async def call(self, method: str, path: str, body: Any = NO_BODY, params: dict | None = None) -> Any:
        """The answer's JSON (its text when it is not JSON; None when it has no body)."""
        answer = await self.send(method, path, body, params)
        if not answer.body:
            return None
        if "json" in answer.headers.get("Content-Type", ""):
            return json.loads(answer.body)
        return answer.body.decode("utf-8", errors="replace")

    async def send(self, method: str, path: str, body: Any = NO_BODY, params: dict | None = None) -> Answer:
        """One request; path starts with '/' (path segments already quoted). body: JSON, or an
        aiohttp.MultipartWriter (a multipart/form-data body). None-valued params are left out,
        booleans sent as true/false. Raises AdminError for anything but a 2xx answer."""
        url = self.url + path
        options: dict[str, Any] = {"headers": self.authentication.http_headers()}
        if isinstance(body, aiohttp.MultipartWriter):
            options["data"] = body
        elif body is not NO_BODY:
            options["data"] = json.dumps(body)
            options["headers"]["Content-Type"] = "application/json"
        query = {name: _query_value(value) for name, value in (params or {}).items() if value is not None}
        if query:
            options["params"] = query
        try:
            async with self._session.request(method, url, **options) as response:
                data = await response.read()
        except aiohttp.ClientConnectorError as exc:
            raise AdminError(f"cannot connect to {self.url}: {exc.os_error}") from exc
        except aiohttp.ClientError as exc:
            raise AdminError(f"{method} {url} failed: {describe(exc)}") from exc
        except asyncio.TimeoutError as exc:
            raise AdminError(f"{method} {url}: no answer within {self.timeout_seconds:g} seconds "
                             f"(--request-timeout)") from exc
        if response.status >= 300:
            raise AdminError(f"{_reason(data, response.reason)} (HTTP {response.status})")
        return Answer(response.status, response.headers, data)


def tls_context(authentication: Authentication, trust_cert_path: str | None, allow_insecure: bool) -> ssl.SSLContext:
    """The client TLS context of an https:// admin URL: the CAs of --tls-trust-cert-path (else the
    system's), no verification with --tls-allow-insecure, and AuthenticationTls's certificate."""
    context = ssl.create_default_context(cafile=trust_cert_path)
    if allow_insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if isinstance(authentication, AuthenticationTLS):
        context.load_cert_chain(authentication.certificate_path, authentication.private_key_path)
    return context


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _reason(data: bytes, http_reason: str | None) -> str:
    """The server's {"reason": ...}, else its text (first line), else the HTTP reason phrase."""
    text = data.decode("utf-8", errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("reason"), str):
        text = parsed["reason"]
    text = " ".join(text.split())
    return text or http_reason or "(no reason given)"


def show(value: Any) -> None:
    """Print as pulsar-admin does: a string as is, a list item by item, others as pretty JSON."""
    if isinstance(value, str):
        print(value)
    elif isinstance(value, list):
        for item in value:
            show(item)
    else:
        print(jackson_pretty(value))


def jackson_pretty(value: Any, level: int = 0) -> str:
    """value as Jackson's DefaultPrettyPrinter writes it: objects one member a line indented by
    two spaces with ' : ' after the name, arrays on the line of their first item ('[ a, b ]',
    '[ {' ... '} ]'), empty ones as '{ }' and '[ ]'."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "  " * (level + 1)
        members = (f"{inner}{json.dumps(str(key), ensure_ascii=False)} : {jackson_pretty(item, level + 1)}"
                   for key, item in value.items())
        return "{\n" + ",\n".join(members) + "\n" + "  " * level + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(item, level) for item in value) + " ]"
    return json.dumps(value, ensure_ascii=False)
