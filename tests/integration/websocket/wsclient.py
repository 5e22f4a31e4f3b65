"""A WebSocket API session in tests, over websocket-client (the library Pulsar's docs use).

    with ws_session(broker, "producer/persistent/public/default/t") as ws:
        ws.send_json({"payload": b64(b"hi")})
        assert ws.recv_json()["result"] == "ok"

recv_json() waits at most `timeout` seconds for a text frame; close_frame() reads until the
broker's close frame and returns (code, reason); refused() returns (status, reason) of an upgrade
the broker answered with an HTTP error.
"""
from __future__ import annotations

import base64
import contextlib
import json
import struct

import websocket

from tests.helpers import BrokerThread


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def ws_url(broker: BrokerThread, path: str, scheme: str = "ws", port: int | None = None) -> str:
    """The URL of /ws/v2/<path> (or of `path` itself when it starts with /) on broker's web port."""
    port = port or broker.broker.web.port
    return f"{scheme}://127.0.0.1:{port}" + (path if path.startswith("/") else f"/ws/v2/{path}")


class WsSession:
    """One open session (websocket.WebSocket underneath, as .socket)."""

    def __init__(self, socket: websocket.WebSocket):
        self.socket = socket

    def send_json(self, value) -> None:
        self.socket.send(json.dumps(value))

    def send_text(self, text: str) -> None:
        self.socket.send(text)

    def recv_json(self, timeout: float = 10.0) -> dict:
        """The next text frame as JSON; websocket.WebSocketTimeoutException after timeout seconds;
        AssertionError when the broker closes the session instead."""
        self.socket.settimeout(timeout)
        opcode, data = self.socket.recv_data(control_frame=True)
        assert opcode == websocket.ABNF.OPCODE_TEXT, f"expected a text frame, got opcode {opcode}: {data!r}"
        return json.loads(data)

    def nothing_within(self, seconds: float) -> bool:
        """True when no frame arrives for `seconds` (the socket stays open)."""
        self.socket.settimeout(seconds)
        try:
            opcode, data = self.socket.recv_data(control_frame=True)
        except websocket.WebSocketTimeoutException:
            return True
        raise AssertionError(f"expected nothing, got opcode {opcode}: {data!r}")

    def close_frame(self, timeout: float = 10.0) -> tuple[int, str]:
        """(code, reason) of the broker's close frame; text frames before it are skipped."""
        self.socket.settimeout(timeout)
        while True:
            opcode, data = self.socket.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
                return code, data[2:].decode("utf-8")

    def close(self) -> None:
        self.socket.close()


@contextlib.contextmanager
def ws_session(broker: BrokerThread, path: str, **options):
    """An open session on /ws/v2/<path>; options go to websocket.create_connection (header=...)."""
    session = WsSession(websocket.create_connection(ws_url(broker, path), timeout=10, **options))
    try:
        yield session
    finally:
        session.close()


def refused(url: str, **options) -> tuple[int, str]:
    """(HTTP status, reason) of an upgrade the broker refuses; AssertionError when it accepts."""
    try:
        socket = websocket.create_connection(url, timeout=10, **options)
    except websocket.WebSocketBadStatusException as exc:
        body = exc.resp_body.decode("utf-8") if exc.resp_body else "{}"
        return exc.status_code, json.loads(body).get("reason", "")
    socket.close()
    raise AssertionError(f"{url} was accepted")
