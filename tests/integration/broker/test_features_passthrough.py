"""Pass-through fields (issue 7, item 9): encryption metadata, null_value, schema_version and the
replication fields reach consumers byte for byte — the broker stores and forwards the producer's
headers and payload unchanged."""
from __future__ import annotations

import collections

import pulsar

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload
from tests.helpers import RawConnection

Type = api.BaseCommand.Type
SCHEMA_VERSION = (3).to_bytes(8, "big")


class FrameConnection(RawConnection):
    """RawConnection that keeps whole frames (command and headers-and-payload)."""

    def __init__(self, url: str):
        super().__init__(url)
        self.frames: collections.deque = collections.deque()

    def receive_frame(self):
        while not self.frames:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by broker")
            self.frames.extend(self.decoder.feed(chunk))
        return self.frames.popleft()

    def receive(self) -> api.BaseCommand:
        return self.receive_frame().command


def _metadata(sequence_id: int, encrypted: bool) -> api.MessageMetadata:
    metadata = api.MessageMetadata(producer_name="raw-producer", sequence_id=sequence_id, publish_time=1_700_000_000_000)
    metadata.properties.add(key="p", value="v")
    metadata.schema_version = SCHEMA_VERSION
    metadata.null_value = True
    metadata.replicated_from = "remote-cluster"
    metadata.replicate_to.extend(["c1", "c2"])
    metadata.partition_key = "pk"
    if encrypted:
        key = metadata.encryption_keys.add(key="app-key", value=b"\x01\x02\x03 encrypted data key")
        key.metadata.add(key="version", value="7")
        metadata.encryption_algo = "RSA-AES-GCM"
        metadata.encryption_param = b"twelve-byte!"
    return metadata


def test_fields_pass_through_byte_for_byte(broker, client, topic):
    official = client.subscribe(topic, "official", initial_position=pulsar.InitialPosition.Earliest,
                                crypto_failure_action=pulsar.ConsumerCryptoFailureAction.CONSUME)
    producer = FrameConnection(broker.url)
    consumer = FrameConnection(broker.url)
    try:
        producer.connect()
        producer.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1, producer_name="raw-producer")))
        assert producer.receive().type == Type.PRODUCER_SUCCESS
        sent = [build_headers_and_payload(_metadata(0, encrypted=True), b"ciphertext-bytes"),
                build_headers_and_payload(_metadata(1, encrypted=False), b"")]
        for sequence_id, data in enumerate(sent):
            producer.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=sequence_id)), data)
            assert producer.receive().type == Type.SEND_RECEIPT

        consumer.connect()
        consumer.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription="raw", subType=api.CommandSubscribe.Exclusive, consumer_id=1, request_id=1,
            initialPosition=api.CommandSubscribe.Earliest)))
        assert consumer.receive().type == Type.SUCCESS
        consumer.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=10)))
        received = [consumer.receive_frame() for _ in sent]
        assert [f.command.type for f in received] == [Type.MESSAGE, Type.MESSAGE]
        assert [f.headers_and_payload for f in received] == sent  # byte for byte

        encrypted = official.receive(5000)  # CONSUME: delivered undecrypted, with its context
        context = encrypted.encryption_context()
        assert context is not None and context.is_decryption_failed()
        assert context.algorithm() == "RSA-AES-GCM" and context.param() == b"twelve-byte!"
        [key] = context.keys()
        assert key.key == "app-key" and key.value == b"\x01\x02\x03 encrypted data key"
        assert key.metadata == {"version": "7"}
        assert encrypted.data() == b"ciphertext-bytes"
        plain = official.receive(5000)
        assert plain.has_null_value()
        assert plain.schema_version().encode("latin-1") == SCHEMA_VERSION  # the client returns a str
        assert plain.properties() == {"p": "v"} and plain.partition_key() == "pk"
        assert plain.producer_name() == "raw-producer"
    finally:
        producer.close()
        consumer.close()
