"""Every error the bundled client raises, named as the official `pulsar` package names them.

All derive from PulsarException. `from_server_error(code, message)` maps a protocol ServerError
(CommandError.error, CommandSendError.error, lookup failures) to the matching class.
Source: the exception classes of the official `pulsar` package (names), the protocol's ServerError
enum (codes).
"""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api


class PulsarException(Exception):
    """Base class of every client error."""


class UnknownError(PulsarException):
    """The broker answered UnknownError, or something unexpected happened."""


class InvalidConfiguration(PulsarException):
    """An option has an impossible value (raised before anything is sent)."""


class Timeout(PulsarException):
    """An operation did not finish within its timeout (operation, send or receive timeout)."""


class LookupError(PulsarException):  # noqa: A001 - the official name shadows the builtin, on purpose
    """Topic lookup failed, or redirects exceeded the limit."""


class ConnectError(PulsarException):
    """The TCP connection or the CONNECT handshake failed, or the connection dropped mid-request."""


class ReadError(PulsarException):
    """A frame from the broker could not be decoded."""


class AuthenticationError(PulsarException):
    """The broker refused our credentials."""


class AuthorizationError(PulsarException):
    """The broker refused the operation for our role."""


class ErrorGettingAuthenticationData(PulsarException):
    """The authentication plugin could not produce its data."""


class BrokerMetadataError(PulsarException):
    """ServerError MetadataError."""


class BrokerPersistenceError(PulsarException):
    """ServerError PersistenceError: the broker could not store the message."""


class ChecksumError(PulsarException):
    """The broker rejected a message whose CRC32C did not match."""


class ConsumerBusy(PulsarException):
    """Another consumer holds the Exclusive subscription, or the subscription type differs."""


class NotConnected(PulsarException):
    """The handle has no connection right now."""


class AlreadyClosed(PulsarException):
    """The client, producer, consumer or reader is closed."""


class InvalidMessage(PulsarException):
    """A message could not be decoded (bad batch, decompression failure)."""


class ConsumerNotInitialized(PulsarException):
    """The consumer was used before it finished subscribing."""


class ProducerNotInitialized(PulsarException):
    """The producer was used before the broker accepted it."""


class ProducerBusy(PulsarException):
    """A producer with the same name is already connected to the topic."""


class TooManyLookupRequestException(PulsarException):
    """ServerError TooManyRequests."""


class InvalidTopicName(PulsarException):
    """The topic name cannot be parsed."""


class InvalidUrl(PulsarException):
    """The service URL is not pulsar://host:port."""


class ServiceUnitNotReady(PulsarException):
    """ServerError ServiceNotReady: the broker is not ready for this topic (e.g. shutting down)."""


class OperationNotSupported(PulsarException):
    """The operation is not possible on this handle (e.g. seek on a multi-topic consumer)."""


class ProducerBlockedQuotaExceededError(PulsarException):
    """ServerError ProducerBlockedQuotaExceededError."""


class ProducerBlockedQuotaExceededException(PulsarException):
    """ServerError ProducerBlockedQuotaExceededException."""


class ProducerQueueIsFull(PulsarException):
    """max_pending_messages are waiting and block_if_queue_full is False."""


class MessageTooBig(PulsarException):
    """The (compressed) message exceeds the broker's max_message_size."""


class TopicNotFound(PulsarException):
    """The topic does not exist and the broker will not create it."""


class SubscriptionNotFound(PulsarException):
    """The subscription does not exist."""


class ConsumerNotFound(PulsarException):
    """The broker does not know this consumer."""


class UnsupportedVersionError(PulsarException):
    """The broker does not support this protocol version or feature."""


class TopicTerminated(PulsarException):
    """The topic was terminated; no more messages can be published."""


class CryptoError(PulsarException):
    """Encryption or decryption failed (encryption is not supported by the bundled client)."""


class IncompatibleSchema(PulsarException):
    """The broker refused the schema."""


class ConsumerAssignError(PulsarException):
    """The broker could not assign the consumer (e.g. Key_Shared sticky ranges overlap)."""


class CumulativeAcknowledgementNotAllowedError(PulsarException):
    """Cumulative acks are not allowed on Shared, Key_Shared and Key_Failover subscriptions."""


class TransactionCoordinatorNotFoundError(PulsarException):
    """ServerError TransactionCoordinatorNotFound."""


class InvalidTxnStatusError(PulsarException):
    """ServerError InvalidTxnStatus."""


class NotAllowedError(PulsarException):
    """ServerError NotAllowedError: the broker refused the request."""


class TransactionConflict(PulsarException):
    """ServerError TransactionConflict."""


class TransactionNotFound(PulsarException):
    """ServerError TransactionNotFound."""


class ProducerFenced(PulsarException):
    """Another producer took the topic exclusively; this one will not reconnect."""


class MemoryBufferIsFull(PulsarException):
    """The client's memory limit is reached."""


class Interrupted(PulsarException):
    """The operation was interrupted (the handle closed while waiting)."""


_BY_SERVER_ERROR: dict[int, type[PulsarException]] = {
    api.UnknownError: UnknownError,
    api.MetadataError: BrokerMetadataError,
    api.PersistenceError: BrokerPersistenceError,
    api.AuthenticationError: AuthenticationError,
    api.AuthorizationError: AuthorizationError,
    api.ConsumerBusy: ConsumerBusy,
    api.ServiceNotReady: ServiceUnitNotReady,
    api.ProducerBlockedQuotaExceededError: ProducerBlockedQuotaExceededError,
    api.ProducerBlockedQuotaExceededException: ProducerBlockedQuotaExceededException,
    api.ChecksumError: ChecksumError,
    api.UnsupportedVersionError: UnsupportedVersionError,
    api.TopicNotFound: TopicNotFound,
    api.SubscriptionNotFound: SubscriptionNotFound,
    api.ConsumerNotFound: ConsumerNotFound,
    api.TooManyRequests: TooManyLookupRequestException,
    api.TopicTerminatedError: TopicTerminated,
    api.ProducerBusy: ProducerBusy,
    api.InvalidTopicName: InvalidTopicName,
    api.IncompatibleSchema: IncompatibleSchema,
    api.ConsumerAssignError: ConsumerAssignError,
    api.TransactionCoordinatorNotFound: TransactionCoordinatorNotFoundError,
    api.InvalidTxnStatus: InvalidTxnStatusError,
    api.NotAllowedError: NotAllowedError,
    api.TransactionConflict: TransactionConflict,
    api.TransactionNotFound: TransactionNotFound,
    api.ProducerFenced: ProducerFenced,
}

# Errors worth retrying while (re)connecting a handle. Source: Pulsar's C++ isResultRetryable.
RETRYABLE = (ConnectError, Timeout, ServiceUnitNotReady, TooManyLookupRequestException, LookupError,
             BrokerMetadataError, BrokerPersistenceError, NotConnected, ReadError)


def from_server_error(code: int, message: str = "") -> PulsarException:
    """The exception for a protocol ServerError, carrying the broker's message (returned, not raised).

    Arguments:
        code (int): a ServerError value; unknown codes give UnknownError. No default.
        message (str): the broker's message. Default: "".
    """
    cls = _BY_SERVER_ERROR.get(code, UnknownError)
    name = api.ServerError.Name(code) if code in api.ServerError.values() else str(code)
    return cls(f"{name}: {message}" if message else name)

__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and issubclass(value, PulsarException)]
