"""Schemas: how values become bytes and back. BytesSchema (default) and StringSchema; subclass
Schema for more (encode, decode and the SchemaInfo sent with PRODUCER/SUBSCRIBE).

As the C++ client does, BytesSchema sends no schema to the broker and StringSchema sends
type String with empty schema_data. Source: Pulsar's C++ Commands::newProducer / newSubscribe (a
schema only for typed schemas).
"""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api


class Schema:
    """Base class of schemas; subclasses set schema_type and name and implement encode/decode.

    Class attributes:
        schema_type (int | None): a Schema.Type value of the protocol, or None to send no schema.
        name (str): the schema name sent with it.
    """

    schema_type: int | None = None
    name = "bytes"

    def encode(self, value) -> bytes:
        """The bytes of value.

        Arguments:
            value (object): what the application sends. No default.

        Raises:
            TypeError: value does not suit the schema.
        """
        raise NotImplementedError

    def decode(self, data: bytes):
        """The value of data.

        Arguments:
            data (bytes): a received payload. No default.
        """
        raise NotImplementedError

    def schema_info(self) -> api.Schema | None:
        """The Schema proto for PRODUCER/SUBSCRIBE, or None to send none."""
        if self.schema_type is None:
            return None
        return api.Schema(name=self.name, schema_data=b"", type=self.schema_type)


class BytesSchema(Schema):
    """Raw bytes in, raw bytes out."""

    def encode(self, value: bytes) -> bytes:
        """bytes(value). Raises TypeError unless value is bytes, bytearray or memoryview."""
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"BytesSchema expects bytes, got {type(value).__name__}")
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        """data unchanged."""
        return data


class StringSchema(Schema):
    """str encoded as UTF-8."""

    schema_type = api.Schema.String
    name = "String"

    def encode(self, value: str) -> bytes:
        """value as UTF-8. Raises TypeError unless value is a str."""
        if not isinstance(value, str):
            raise TypeError(f"StringSchema expects str, got {type(value).__name__}")
        return value.encode("utf-8")

    def decode(self, data: bytes) -> str:
        """data decoded as UTF-8. Raises UnicodeDecodeError on invalid UTF-8."""
        return data.decode("utf-8")
