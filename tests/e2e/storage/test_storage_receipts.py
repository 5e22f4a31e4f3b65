"""No SEND_RECEIPT leaves before its entry is durable, checked on the system calls of a running broker.

strace follows every thread of a broker process while the official client publishes messages with
unique payloads. In the order the calls completed, each SEND_RECEIPT written to the client's
socket must come after the journal write that made its message durable: a pwritev2 with
RWF_DSYNC on a journal file (journalSyncData=true) whose bytes hold the payload.
"""
from __future__ import annotations

import re
import threading

import pulsar
import pytest

from minipulsar.launcher import BrokerProcess
from minipulsar.proto import PulsarApi_pb2 as api
from tools.crashstates.strace_parse import parse_lines
from tools.strace_attach import attach_strace

MESSAGES = 300
TRACED = "pwritev2,pwritev,fdatasync,write,writev,sendmsg,sendto"


def receipts_in(data: bytes) -> list[int]:
    """The sequence ids of the SEND_RECEIPT frames in bytes written to a client socket."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        total = int.from_bytes(data[pos:pos + 4], "big")
        size = int.from_bytes(data[pos + 4:pos + 8], "big")
        if size <= total:
            command = api.BaseCommand()
            command.ParseFromString(data[pos + 8:pos + 8 + size])
            if command.type == api.BaseCommand.SEND_RECEIPT:
                out.append(command.send_receipt.sequence_id)
        pos += 4 + total
    return out


def written_bytes(call) -> bytes:
    """The bytes a write / writev / pwritev2 / sendmsg handed the kernel."""
    if call.name in ("write", "sendto"):
        return call.args[1]
    if call.name == "sendmsg":
        return b"".join(vec["iov_base"] for vec in call.args[1]["msg_iov"])
    return b"".join(vec["iov_base"] for vec in call.args[1])


def test_no_receipt_leaves_before_its_entry_is_durable(strace_ok, tmp_path):
    payloads = [f"receipt-check-{i:04d}".encode() for i in range(MESSAGES)]
    trace = tmp_path / "broker.strace"
    with BrokerProcess(tmp_path / "data", {"journalSyncData": "true"}) as broker:
        tracer = attach_strace(broker.pid, ["-f", "-qq", "-y", "-xx", "-s", "65536", "-e", f"trace={TRACED}",
                                            "-o", str(trace)])
        try:
            client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            producer = client.create_producer("persistent://public/default/receipts", batching_enabled=False)
            acked = threading.Semaphore(0)
            for payload in payloads:
                producer.send_async(payload, lambda result, _id: acked.release())
            for _ in payloads:
                assert acked.acquire(timeout=30)
            client.close()
        finally:
            tracer.send_signal(2)  # SIGINT: strace detaches and the broker runs on
            tracer.wait(20)
    durable_at: dict[int, int] = {}  # sequence id -> index of the call that made it durable
    receipt_at: dict[int, int] = {}  # sequence id -> index of the call that wrote its receipt
    pattern = re.compile(rb"receipt-check-(\d{4})")
    calls = parse_lines(trace.read_text().splitlines())
    for index, call in enumerate(calls):
        if not call.ok:
            continue
        target = call.args[0].path or ""
        if call.name == "pwritev2" and target.endswith(".jnl") and "RWF_DSYNC" in call.args[-1].flags():
            for match in pattern.finditer(written_bytes(call)):
                durable_at.setdefault(int(match.group(1)), index)
        elif call.name in ("write", "writev", "sendmsg", "sendto") and target.startswith("socket:"):
            for sequence_id in receipts_in(written_bytes(call)):
                receipt_at.setdefault(sequence_id, index)
    assert sorted(receipt_at) == list(range(MESSAGES)), "every receipt is in the trace"
    assert sorted(durable_at) == list(range(MESSAGES)), "every message went through a synced journal write"
    early = [seq for seq, at in receipt_at.items() if at < durable_at[seq]]
    assert not early, f"receipts written before their entry was durable: {early[:10]}"
