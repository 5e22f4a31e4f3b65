"""Exceptions of the Spark data source and sink."""
from __future__ import annotations


class PipelineError(Exception):
    """Base of every error raised by pipeline/."""


class PulsarOptionError(PipelineError, ValueError):
    """An option is missing, unknown in combination, or has a value that cannot be read."""


class DataLossError(PipelineError):
    """Messages a range should hold can no longer be read (topic deleted, entries trimmed)
    and failOnDataLoss is true."""


class PublishError(PipelineError):
    """A sink task could not publish every row; the message says how many it did publish."""
