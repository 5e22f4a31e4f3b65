"""Schemas: how values become bytes and back. BytesSchema (default) and StringSchema; subclass
Schema for more (encode, decode and the SchemaInfo sent with PRODUCER/SUBSCRIBE).

As the C++ client does, BytesSchema sends no schema to the broker and StringSchema sends
type String with empty schema_data. Source: C++ lib/Commands.cc (schema only for typed schemas).
"""
from __future__ import annotations

from proto import PulsarApi_pb2 as api


class Schema:
    """Base class. schema_type: a Schema.Type value of PulsarApi, or None for no schema info."""

    schema_type: int | None = None
    name = "bytes"

    def encode(self, value) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes):
        raise NotImplementedError

    def schema_info(self) -> api.Schema | None:
        """The Schema proto for PRODUCER/SUBSCRIBE, or None to send none."""
        if self.schema_type is None:
            return None
        return api.Schema(name=self.name, schema_data=b"", type=self.schema_type)


class BytesSchema(Schema):
    """Raw bytes in, raw bytes out."""

    def encode(self, value: bytes) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"BytesSchema expects bytes, got {type(value).__name__}")
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        return data


class StringSchema(Schema):
    """str encoded as UTF-8."""

    schema_type = api.Schema.String
    name = "String"

    def encode(self, value: str) -> bytes:
        if not isinstance(value, str):
            raise TypeError(f"StringSchema expects str, got {type(value).__name__}")
        return value.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")
