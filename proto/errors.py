"""Errors of the wire format: frames that break the protocol, entries that cannot be read, and
compression codecs that are missing.

A FrameError means the peer broke the protocol and the connection must close. An EntryError means
one stored entry (the headers and payload a SEND or MESSAGE carries) cannot be read: its checksum,
its compression or its batch layout is broken; the connection goes on and the caller decides what
becomes of the entry (a consumer acknowledges it with a CommandAck.ValidationError, a reader skips
it). A CodecUnavailableError names the package a compression type needs.
"""


class FrameError(Exception):
    """A frame could not be decoded (bad sizes, unparsable command); the connection must close."""


class FrameTooLargeError(FrameError):
    """A frame's size field exceeds the limit (maxMessageSize + 10 KiB padding)."""


class EntryError(Exception):
    """A stored entry cannot be read; the subclass says what is broken."""


class ChecksumMismatchError(EntryError):
    """The entry's CRC32C does not match its bytes (CommandAck.ValidationError ChecksumMismatch)."""


class CorruptPayloadError(EntryError):
    """The payload does not decompress, or not to MessageMetadata.uncompressed_size bytes, or its
    compression type is unknown (CommandAck.ValidationError DecompressionError)."""


class BatchFormatError(EntryError):
    """A batch payload does not split into its num_messages_in_batch messages: a size runs past the
    payload or a SingleMessageMetadata does not parse (CommandAck.ValidationError
    BatchDeSerializeError)."""


class CodecUnavailableError(Exception):
    """A compression type's package is not installed; package is its name on PyPI."""

    def __init__(self, kind_name: str, package: str):
        super().__init__(f"{kind_name} compression needs the {package} package")
        self.package = package
