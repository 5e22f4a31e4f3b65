"""Errors raised while decoding frames; each means the peer broke the protocol."""


class FrameError(Exception):
    """A frame could not be decoded (bad sizes, unparsable command); the connection must close."""


class FrameTooLargeError(FrameError):
    """A frame's size field exceeds the limit (maxMessageSize + 10 KiB padding)."""
