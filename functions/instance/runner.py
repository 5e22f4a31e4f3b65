"""The consume-process-produce loop of one instance process, with Pulsar's semantics.

Inputs: one subscription named subName or `{tenant}/{namespace}/{name}`, Shared by default,
Failover with retainOrdering or EFFECTIVELY_ONCE, Key_Shared with retainKeyOrdering (Pulsar's
python_instance.run); the input topics without a schema share one consumer, a topic pattern and
each schema get their own (minipulsar.functions.instance.inputs). maxMessageRetries sets the
consumer's dead-letter policy (deadLetterTopic, else the client's `<topic>-<subscription>-DLQ`).

Per message: ATMOST_ONCE acknowledges on receipt; the input is decoded (the topic's SerDe, or
its schema), process() is called; an exception counts as a user exception and negatively
acknowledges the input; a result is encoded and sent to the output topic with the properties
`__pfn_input_topic__` and `__pfn_input_msg_id__` (base64 of the serialized message id), and under
ATLEAST_ONCE (with autoAck) the input is acknowledged when the broker has made the output durable
(the send callback); a None result, or no output topic, acknowledges at once. EFFECTIVELY_ONCE
sends with the producer named after the output topic, batching off, and the sequence id
((ledgerId << 28) | entryId) + 1 of the input (Pulsar's FunctionCommon.getSequenceId, plus one:
see sequence_id), so a broker with deduplication on drops what a restarted instance sends again;
partitioned inputs are refused there, as Pulsar's Python runtime does. MANUAL and autoAck=false
leave acknowledging to Context.ack. A failed send negatively acknowledges the input.

timeoutMs: the consumers' ack timeout (the official client's minimum is 10 s, so
max(timeoutMs, 10000)), and a watchdog: a process() call running longer than timeoutMs ends the
instance (exit status 4), which the worker reports and restarts; its unacknowledged inputs go to
the other consumers. The loop stops when `stop` is set (SIGTERM, or the worker gone): outputs are
flushed so their inputs get acknowledged, then the consumers close.
"""
from __future__ import annotations

import base64
import functools
import logging
import os
import threading
import time
from typing import Any

import pulsar

from minipulsar.functions.instance.context import ContextImpl
from minipulsar.functions.instance.inputs import Inputs, Received
from minipulsar.functions.instance.loader import load_function, load_schema, load_serde
from minipulsar.functions.instance.stats import InstanceStats, Reporter, exception_text
from minipulsar.functions.spec import InstanceSpec

log = logging.getLogger(__name__)

POLL_MILLIS = 100  # how often the loop looks at `stop` while no message comes
EXIT_TIMEOUT = 4  # the instance's exit status when process() outlives timeoutMs
COMPRESSION = {"NONE": pulsar.CompressionType.NONE, "LZ4": pulsar.CompressionType.LZ4,
               "ZLIB": pulsar.CompressionType.ZLib, "ZSTD": pulsar.CompressionType.ZSTD,
               "SNAPPY": pulsar.CompressionType.SNAPPY}


def pfn_message_id(message_id: Any) -> str:
    """__pfn_input_msg_id__: the serialized message id, URL-safe base64 (Pulsar's base64ify)."""
    return base64.urlsafe_b64encode(message_id.serialize()).decode("ascii")


def sequence_id(message_id: Any) -> int:
    """((ledgerId << 28) | entryId) + 1: Pulsar's FunctionCommon.getSequenceId, plus one. A
    managed ledger's ids start at 0 here (BookKeeper's never are), and the official Python client
    takes a sequence id of 0 for "unset" and numbers the message itself, which let the output of
    a topic's first entry be stored again after a restart and its number drop a later output."""
    return ((message_id.ledger_id() << 28) | message_id.entry_id()) + 1


class InstanceRunner:
    """Runs spec's function until stop is set; client: a connected pulsar.Client."""

    def __init__(self, spec: InstanceSpec, client: Any, stats: InstanceStats, reporter: Reporter,
                 stop: threading.Event, logger: logging.Logger):
        self.spec = spec
        self.config = spec.config
        self.client = client
        self.stats = stats
        self.reporter = reporter
        self.stop = stop
        guarantees = self.config["processingGuarantees"]
        self.ack_on_receipt = guarantees == "ATMOST_ONCE"
        self.effectively_once = guarantees == "EFFECTIVELY_ONCE"
        self.ack_after = self.config["autoAck"] and guarantees in ("ATLEAST_ONCE", "EFFECTIVELY_ONCE")
        self.function, _ = load_function(self.config["className"])
        self.output_schema = load_schema(self.config.get("outputSchemaType"), self.config.get("outputTypeClassName"),
                                         None)
        self.output_serde = None if self.output_schema is not None else load_serde(self.config.get("outputSerdeClassName"))
        self.inputs = Inputs(spec, client)
        self.context = ContextImpl(spec, client, self.inputs.consumer_for, self.producer_options(), stats, logger)
        self.producer: Any = None
        self.watchdog = Watchdog(self.config.get("timeoutMs"), self.timed_out)

    def producer_options(self, name: str | None = None) -> dict:
        """Pulsar's Python runtime producer: batched (10 ms), blocking when full, no send timeout,
        LZ4 unless producerConfig says otherwise, the function's properties."""
        producer_config = self.config.get("producerConfig") or {}
        options = {"block_if_queue_full": True, "batching_enabled": not self.effectively_once,
                   "batching_max_publish_delay_ms": 10, "send_timeout_millis": 0,
                   "compression_type": COMPRESSION.get(producer_config.get("compressionType") or "LZ4",
                                                       pulsar.CompressionType.LZ4),
                   "properties": self.inputs.properties}
        if (producer_config.get("batchBuilder") or self.config.get("batchBuilder")) == "KEY_BASED":
            options["batching_type"] = pulsar.BatchingType.KeyBased
        if producer_config.get("maxPendingMessages"):
            options["max_pending_messages"] = producer_config["maxPendingMessages"]
        if name is not None:
            options["producer_name"] = name
        return options

    # ---- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        self.inputs.subscribe()
        self.reporter.running()
        self.watchdog.start()
        try:
            while not self.stop.is_set():
                received = self.inputs.receive(POLL_MILLIS)
                if received is not None:
                    self.handle(received)
        finally:
            self.close()

    def handle(self, received: Received) -> None:
        consumer, message = received.consumer, received.message
        self.stats.received()
        if self.ack_on_receipt:
            consumer.acknowledge(message)
        try:
            value = received.decode()
        except Exception:  # noqa: BLE001 - a bad input is a system exception, as in Pulsar
            self._system_failure(received, exception_text())
            return
        self.context.set_message(message)
        self.stats.invoked()
        started = time.monotonic()
        self.watchdog.begin()
        try:
            output = self.function(value, self.context)
        except Exception:  # noqa: BLE001 - the user's exception is counted and the input retried
            self.watchdog.end()
            self.context.get_logger().exception("Exception while executing user method")
            self.stats.user_exception(exception_text())
            if not self.ack_on_receipt:
                consumer.negative_acknowledge(message)
            return
        self.watchdog.end()
        latency_ms = (time.monotonic() - started) * 1000.0
        try:
            self.emit(output, received)
        except Exception:  # noqa: BLE001
            self._system_failure(received, exception_text())
            return
        self.stats.processed(latency_ms)

    def emit(self, output: Any, received: Received) -> None:
        message = received.message
        if output is None or not self.config.get("output"):
            if self.ack_after:
                received.consumer.acknowledge(message)
            return
        payload = output if self.output_schema is not None else self.output_serde.serialize(output)
        options = {"properties": {"__pfn_input_topic__": received.topic,
                                  "__pfn_input_msg_id__": pfn_message_id(message.message_id())}}
        if self.effectively_once:
            if message.message_id().partition() >= 0:
                raise RuntimeError("Partitioned topic is not available in effectively_once mode.")
            options["sequence_id"] = sequence_id(message.message_id())
        self.output_producer().send_async(payload, functools.partial(self._sent, received), **options)

    def output_producer(self) -> Any:
        if self.producer is None:
            name = self.config["output"] if self.effectively_once else None
            options = self.producer_options(name)
            if self.output_schema is not None:
                options["schema"] = self.output_schema
            self.producer = self.client.create_producer(self.config["output"], **options)
        return self.producer

    def _sent(self, received: Received, result: Any, message_id: Any) -> None:
        """The send callback (the client's thread): acknowledge once the output is durable."""
        if result == pulsar.Result.Ok:
            if self.ack_after:
                received.consumer.acknowledge(received.message)
            return
        self.stats.system_exception(f"Failed to publish to topic [{self.config['output']}] with error [{result}] "
                                    f"with src message id [{received.message.message_id()}]")
        if not self.ack_on_receipt:
            received.consumer.negative_acknowledge(received.message)

    def _system_failure(self, received: Received, text: str) -> None:
        log.error("Uncaught exception in Python instance: %s", text)
        self.stats.system_exception(text)
        if not self.ack_on_receipt:
            received.consumer.negative_acknowledge(received.message)

    def timed_out(self) -> None:
        text = f"process() did not return within timeoutMs ({self.config['timeoutMs']} ms); instance stopped"
        log.error(text)
        self.reporter.error(text)
        os._exit(EXIT_TIMEOUT)  # the hung call cannot be interrupted; the worker restarts the process

    def close(self) -> None:
        """Flush outputs (their inputs get acknowledged), then close consumers and producers."""
        self.watchdog.stop()
        for flush in (self.producer.flush if self.producer else None, self.context.flush):
            try:
                if flush is not None:
                    flush()
            except Exception:  # noqa: BLE001 - closing goes on; unacknowledged inputs are redelivered
                log.exception("flushing outputs failed")
        self.inputs.close()
        self.context.close()


class Watchdog:
    """Calls on_expire from its thread when a process() call outlives timeout_ms (None: never)."""

    def __init__(self, timeout_ms: int | None, on_expire):
        self.timeout = timeout_ms / 1000.0 if timeout_ms else None
        self.on_expire = on_expire
        self.started: float | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        if self.timeout is not None:
            threading.Thread(target=self._watch, name="process-timeout", daemon=True).start()

    def begin(self) -> None:
        self.started = time.monotonic()

    def end(self) -> None:
        self.started = None

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(min(self.timeout / 4, 0.25)):
            started = self.started
            if started is not None and time.monotonic() - started > self.timeout:
                self.on_expire()
