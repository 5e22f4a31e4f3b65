"""What the worker does as a client of the broker: trigger a function, and delete its
subscription when the function is deleted.

Trigger (Pulsar's FunctionsImpl.triggerFunction): the topic must be one of the function's inputs
(the only one when none is named: 400 "Function in trigger function has more than 1 input
topics"; an unknown one: 400 "Function in trigger function has unidentified topic"); a reader
starts at the end of the output topic, the value is published to the input topic, and the reader
looks for the output whose `__pfn_input_topic__` and `__pfn_input_msg_id__` name that message,
answering its payload as text; none within TRIGGER_TIMEOUT_SECONDS is 408 "Request Timed Out". A
function without an output topic answers None once the value is published. The worker's client is
the bundled asyncio client (it runs on the broker's event loop), created at the first use.

Subscription cleanup (cleanupSubscription, true by default): the function's subscription is
removed from each input topic (each topic a pattern matches), through the broker's own
delete_subscription, which never creates a topic.
"""
from __future__ import annotations

import base64
import binascii
import logging
import re
import time
from typing import TYPE_CHECKING

from minipulsar.functions.errors import InvalidFunctionError, TriggerTimeoutError
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.topic_name import full_topic_name, partitioned_base, split_topic_name

if TYPE_CHECKING:
    from minipulsar.functions.worker import WorkerSettings

log = logging.getLogger(__name__)
TRIGGER_TIMEOUT_SECONDS = 10.0


def input_message_id(properties: dict) -> tuple[int, int] | None:
    """(ledger, entry) of the __pfn_input_msg_id__ property (base64 of a MessageIdData)."""
    text = properties.get("__pfn_input_msg_id__")
    if not text:
        return None
    try:
        data = base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4))
        parsed = api.MessageIdData.FromString(data)
    except (binascii.Error, ValueError):
        return None
    return parsed.ledgerId, parsed.entryId


class Triggers:
    """settings: the worker's settings (service URL, credentials, the broker's callbacks)."""

    def __init__(self, settings: "WorkerSettings"):
        self.settings = settings
        self._client = None

    def _the_client(self):
        if self._client is None:
            from minipulsar.client import Client  # only triggers need the worker's own client

            self._client = Client(self.settings.service_url, authentication=self.settings.client_authentication,
                                  tls_trust_certs_file_path=self.settings.tls_trust_certs_file_path or None)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def trigger(self, config: dict, data: bytes, topic: str | None) -> str | None:
        inputs = list(config["inputSpecs"])
        target = self._input_topic(inputs, topic)
        client = self._the_client()
        reader = None
        if config.get("output"):
            from minipulsar.client import MessageId

            reader = await client.create_reader(config["output"], MessageId.latest)
        producer = await client.create_producer(target)
        try:
            sent = await producer.send(data)
            if reader is None:
                return None
            return await self._output_of(reader, target, (sent.ledger_id(), sent.entry_id()))
        finally:
            await producer.close()
            if reader is not None:
                await reader.close()

    @staticmethod
    def _input_topic(inputs: list[str], topic: str | None) -> str:
        if topic is None:
            if len(inputs) != 1:
                raise InvalidFunctionError("Function in trigger function has more than 1 input topics")
            topic = inputs[0]
        try:
            full = full_topic_name(topic)
        except ValueError:
            full = None
        if full not in inputs:
            raise InvalidFunctionError("Function in trigger function has unidentified topic")
        return full

    @staticmethod
    async def _output_of(reader, topic: str, sent: tuple[int, int]) -> str:
        deadline = time.monotonic() + TRIGGER_TIMEOUT_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await reader.read_next(int(left * 1000) + 1)
            except Exception:  # noqa: BLE001 - the client's Timeout: nothing more within the deadline
                break
            properties = message.properties()
            if properties.get("__pfn_input_topic__") == topic and input_message_id(properties) == sent:
                return message.data().decode("utf-8", errors="replace")
        raise TriggerTimeoutError("Request Timed Out")

    async def delete_subscriptions(self, config: dict) -> None:
        """Remove the function's subscription from its inputs (logged, never raised: the function
        is already gone)."""
        delete = self.settings.delete_subscription
        if delete is None:
            return
        name = (config.get("subName") or "").strip() or f"{config['tenant']}/{config['namespace']}/{config['name']}"
        for topic in self._subscribed_topics(config):
            try:
                await delete(topic, name)
            except Exception as exc:  # noqa: BLE001
                log.warning("cannot delete subscription %s of %s: %s", name, topic, exc)

    def _subscribed_topics(self, config: dict) -> list[str]:
        topics = []
        for topic, spec in config["inputSpecs"].items():
            if not spec.get("isRegexPattern"):
                topics.append(topic)
                continue
            _, tenant, namespace, _ = split_topic_name(topic)
            pattern = re.compile(topic)
            topics.extend(t for t in self.settings.list_topics(f"{tenant}/{namespace}")
                          if pattern.fullmatch(partitioned_base(t)))
        return topics
