"""Broker errors. Each carries the ServerError code the client receives in ERROR / SEND_ERROR."""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api


class BrokerError(Exception):
    """A request failed; server_error is the PulsarApi ServerError value sent back to the client."""

    server_error = api.UnknownError


class InvalidTopicNameError(BrokerError):
    server_error = api.InvalidTopicName


class TopicNotFoundError(BrokerError):
    server_error = api.TopicNotFound


class SubscriptionNotFoundError(BrokerError):
    server_error = api.SubscriptionNotFound


class ConsumerBusyError(BrokerError):
    server_error = api.ConsumerBusy


class ProducerBusyError(BrokerError):
    server_error = api.ProducerBusy


class ProducerFencedError(BrokerError):
    server_error = api.ProducerFenced


class IncompatibleSchemaError(BrokerError):
    server_error = api.IncompatibleSchema


class ConsumerAssignError(BrokerError):
    server_error = api.ConsumerAssignError


class NotAllowedError(BrokerError):
    server_error = api.NotAllowedError


class ServiceNotReadyError(BrokerError):
    server_error = api.ServiceNotReady


class PersistenceFailedError(BrokerError):
    server_error = api.PersistenceError


class MetadataError(BrokerError):
    server_error = api.MetadataError


class TopicExistsError(BrokerError):
    """An admin call would create a topic (or partitioned topic) that exists already."""

    server_error = api.NotAllowedError


class TopicQuotaError(BrokerError):
    """Creating the topic(s) would pass the namespace's maxTopicsPerNamespace."""

    server_error = api.NotAllowedError


class TopicBusyError(BrokerError):
    """An admin call would remove a topic or subscription that clients are connected to."""

    server_error = api.NotAllowedError


class PartitionCountError(BrokerError):
    """A partition count that is not allowed: below 1, or not larger than the current one."""

    server_error = api.NotAllowedError


class TopicTerminatedError(BrokerError):
    """The topic was terminated: it takes no more messages."""

    server_error = api.TopicTerminatedError


class ConflictError(BrokerError):
    """An admin call conflicts with work in progress (a compaction already running)."""

    server_error = api.NotAllowedError
