"""The bundled pure-Python asyncio client of minipulsar.

Mirrors the official `pulsar` package with coroutines where it blocks:

    async with Client("pulsar://127.0.0.1:6650") as client:
        producer = await client.create_producer("my-topic")
        await producer.send(b"hello")
        consumer = await client.subscribe("my-topic", "sub")
        msg = await consumer.receive()
        await consumer.acknowledge(msg)

Imports only proto/ (and optional compression packages). See docs/client.md.
"""
__version__ = "0.1.0"

from minipulsar.client.exceptions import *  # noqa: F401,F403,E402
from minipulsar.client.message import Message  # noqa: E402
from minipulsar.client.message_id import MessageId  # noqa: E402
from minipulsar.client.options import (  # noqa: E402
    BatchingType, CompressionType, ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy, ConsumerType,
    HashingScheme, InitialPosition, KeySharedMode, PartitionsRoutingMode, SubscriptionMode,
)
from minipulsar.client.schema import BytesSchema, Schema, StringSchema  # noqa: E402
from minipulsar.client.auth import AuthenticationBasic, AuthenticationToken  # noqa: E402
from minipulsar.client.client import Client  # noqa: E402
from minipulsar.client.producer import Producer  # noqa: E402
from minipulsar.client.consumer import Consumer  # noqa: E402
from minipulsar.client.reader import Reader  # noqa: E402
