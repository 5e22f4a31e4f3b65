"""Helpers the integration tests share: draining a consumer, waiting for a condition, and a bare
socket that speaks frames (to send what no real client would)."""
from __future__ import annotations

import collections
import socket
import time

import pulsar

from proto import PulsarApi_pb2 as api
from proto.frames import FrameDecoder, encode_command, encode_payload_command


def drain(consumer, timeout_ms: int = 300, ack: bool = False) -> list:
    """Every message that arrives until the consumer stays quiet for timeout_ms (acknowledged
    on the way when ack)."""
    got = []
    while True:
        try:
            message = consumer.receive(timeout_ms)
        except pulsar.Timeout:
            return got
        got.append(message)
        if ack:
            consumer.acknowledge(message)


def wait_for(predicate, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class RawConnection:
    """A bare socket speaking frames, to send what no real client would."""

    def __init__(self, url: str):
        host, port = url.removeprefix("pulsar://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=2)
        self.decoder = FrameDecoder()
        self.pending: collections.deque = collections.deque()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: api.BaseCommand, payload: bytes | None = None) -> None:
        self.send_raw(encode_command(command) if payload is None else encode_payload_command(command, payload))

    def receive(self) -> api.BaseCommand:
        while not self.pending:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by broker")
            self.pending.extend(frame.command for frame in self.decoder.feed(chunk))
        return self.pending.popleft()

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the socket (reads EOF) within the socket timeout."""
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def connect(self) -> api.BaseCommand:
        self.send(api.BaseCommand(type=api.BaseCommand.CONNECT, connect=api.CommandConnect(client_version="raw", protocol_version=20)))
        return self.receive()

    def close(self) -> None:
        self.sock.close()
