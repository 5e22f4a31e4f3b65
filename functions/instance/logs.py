"""The function's logger (Context.get_logger()): its records go to stderr, which the worker
writes to the instance's log file, and, when the function has a logTopic, to that topic too, one
message per record, as Pulsar's LogTopicHandler, with the properties Pulsar's log appender sets
(`loglevel`, `fqn`, `instance`).
"""
from __future__ import annotations

import logging
from typing import Any

from minipulsar.functions.spec import InstanceSpec

LOG_TOPIC_FORMAT = "%(asctime)s.%(msecs)03d [%(threadName)s] %(levelname)s %(name)s - %(message)s"


class LogTopicHandler(logging.Handler):
    """Publishes each record to a topic, asynchronously; a failed send is dropped (logging must
    never stop the function)."""

    def __init__(self, producer: Any, fqfn: str, instance_id: int):
        super().__init__()
        self.producer = producer
        self.properties = {"fqn": fqfn, "instance": str(instance_id)}
        self.setFormatter(logging.Formatter(LOG_TOPIC_FORMAT, datefmt="%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.producer.send_async(self.format(record).encode("utf-8"), _ignore,
                                     properties={**self.properties, "loglevel": record.levelname})
        except Exception:  # noqa: BLE001 - see the class docstring
            self.handleError(record)


def _ignore(result: Any, message_id: Any) -> None:
    """send_async's callback: the record's fate does not change the function's."""


def function_logger(spec: InstanceSpec, client: Any) -> logging.Logger:
    """The logger named after the function (tenant/namespace/name), with its log topic handler."""
    logger = logging.getLogger(spec.fqfn)
    log_topic = spec.config.get("logTopic")
    if log_topic:
        producer = client.create_producer(log_topic, block_if_queue_full=True, batching_enabled=True,
                                          batching_max_publish_delay_ms=10, send_timeout_millis=0)
        logger.addHandler(LogTopicHandler(producer, spec.fqfn, spec.instance_id))
    return logger
