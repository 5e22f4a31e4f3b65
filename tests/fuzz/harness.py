"""The fuzz target: a real broker on a loopback port, two well-behaved bystanders, and the
properties every fuzz session must leave true.

One `FuzzTarget` runs for a whole run of examples. For each `Session` (tests/fuzz/strategies.py)
it opens a fresh socket, sends the session's frames (at each barrier it waits for PONG and for
the publishes sent so far to persist, so later frames act on stored messages), and then checks:

1. the connection either answers PING with PONG, or the broker closed it; a frame our own copy of
   the decoder refuses must close it; every request the broker parsed and left open is answered;
2. the broker logged no ERROR (an exception escaping a handler, a failed background task, an
   asyncio "Task exception was never retrieved"/"Task was destroyed but it is pending") and no
   handler coroutine was dropped unawaited (KNOWN_FINDINGS lists what is tolerated, and why);
3. once the socket is closed the broker forgets the connection, no producer or consumer of it
   stays attached to a topic, and no task created meanwhile is left on the broker's loop (the
   bystanders' own tasks excepted) -- also when the session hangs up with handlers still running;
4. a raw bystander connection, opened before the run and kept for all of it, still produces and
   consumes exactly its own message; so does an official client in a thread of its own, which
   does one round trip per session, in parallel with it;
5. a fresh connection still completes CONNECT and a produce/consume round trip.

Topics the session touched are deleted afterwards, so each session starts from the same state
(which keeps hypothesis' shrinking deterministic). Waits are on state with a deadline, never sleeps.
"""
from __future__ import annotations

import asyncio
import collections
import gc
import logging
import re
import socket
import threading
import time
import uuid
import warnings
from pathlib import Path

import pulsar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minipulsar.broker.topic_name import TopicName
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import (
    FRAME_PADDING,
    FrameDecoder,
    build_headers_and_payload,
    encode_command,
    encode_payload_command,
    split_headers_and_payload,
)

from tests.fuzz.strategies import (
    SETUP_CONSUMER_ID,
    SETUP_PRODUCER_ID,
    SETUP_TOPIC,
    PairSession,
    Session,
)
from tests.helpers import BrokerThread, wait_for

Type = api.BaseCommand.Type
MAX_MESSAGE_SIZE = 64 * 1024  # small, so oversize frames are cheap to send
MAX_FRAME = MAX_MESSAGE_SIZE + FRAME_PADDING
DEADLINE = 10.0  # seconds any single wait may take before it counts as a failure
# Findings whose fix belongs in a file outside this change: the properties here let them pass, and
# a strict xfail regression test (tests/fuzz/test_fuzz_regressions.py) pins each one, so the day it
# is fixed that test passes, fails as XPASS, and its entry here is removed with its xfail mark.
KNOWN_FINDINGS: dict[str, "re.Pattern[str]"] = {}


def _unknown(findings: list[str]) -> list[str]:
    """The findings (error records, orphans) that KNOWN_FINDINGS does not account for."""
    return [f for f in findings if not any(known.match(f) for known in KNOWN_FINDINGS.values())]
_BODY_FIELDS = {fd.number: fd.name for fd in api.BaseCommand.DESCRIPTOR.fields if fd.name != "type"}


class FuzzFailure(AssertionError):
    """A property did not hold; the message says which and what the broker did."""


class ErrorLog(logging.Handler):
    """Keeps every ERROR record of the broker's loggers and of asyncio, formatted with its
    traceback, and every "coroutine ... was never awaited" warning (a handler dropped unrun)."""

    LOGGERS = ("minipulsar", "asyncio")

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self._showwarning = None

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))

    def _warning(self, message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, RuntimeWarning) and "never awaited" in str(message):
            self.records.append(f"{category.__name__}: {message}")
        else:
            self._showwarning(message, category, filename, lineno, file, line)

    def install(self) -> ErrorLog:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        self._showwarning, warnings.showwarning = warnings.showwarning, self._warning
        return self

    def remove(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)
        if warnings.showwarning == self._warning:
            warnings.showwarning = self._showwarning


# ---- a bare socket ----------------------------------------------------------------------------
class Wire:
    """A socket speaking frames, with deadline-bounded reads (the broker's replies are valid frames)."""

    def __init__(self, url: str):
        host, port = url.removeprefix("pulsar://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=DEADLINE)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        host, port = self.sock.getsockname()[:2]
        self.address = f"{host}:{port}"
        self.decoder = FrameDecoder(1 << 30)
        self.pending: list = []
        self.eof = False

    def send_raw(self, data: bytes) -> bool:
        """Write data; False when the broker already closed the socket."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def send(self, command: api.BaseCommand, payload: bytes | None = None) -> bool:
        return self.send_raw(encode_command(command) if payload is None else encode_payload_command(command, payload))

    def next_frame(self, deadline: float):
        """The next frame from the broker; None at EOF; TimeoutError past the deadline (monotonic)."""
        while not self.pending:
            if self.eof:
                return None
            self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                raise TimeoutError("no frame before the deadline") from None
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof = True
                return None
            self.pending.extend(self.decoder.feed(chunk))
        return self.pending.pop(0)

    def expect(self, wanted: int, timeout: float = DEADLINE):
        """Read until a frame of type wanted and return it; FuzzFailure on EOF, timeout or ERROR."""
        frame = self.expect_one_of(wanted, Type.ERROR, Type.SEND_ERROR, timeout=timeout)
        if frame.command.type != wanted:
            raise FuzzFailure(f"{self.address}: {frame.command} while waiting for {Type.Name(wanted)}")
        return frame

    def expect_one_of(self, *wanted: int, timeout: float = DEADLINE):
        """Read until a frame of one of the wanted types and return it; FuzzFailure on EOF or timeout."""
        names = " or ".join(Type.Name(w) for w in wanted)
        deadline = time.monotonic() + timeout
        while True:
            try:
                frame = self.next_frame(deadline)
            except TimeoutError:
                raise FuzzFailure(f"{self.address}: no {names} within {timeout} s") from None
            if frame is None:
                raise FuzzFailure(f"{self.address}: closed by the broker while waiting for {names}")
            if frame.command.type in wanted:
                return frame

    def connect(self) -> None:
        self.send(api.BaseCommand(type=Type.CONNECT, connect=api.CommandConnect(
            client_version="fuzz", protocol_version=20)))
        self.expect(Type.CONNECTED)

    def close(self) -> None:
        self.sock.close()


def _payload_of(frame) -> bytes:
    parsed = split_headers_and_payload(frame.headers_and_payload)
    return frame.headers_and_payload[parsed.payload_offset:]


class RawClient:
    """A producer and an Exclusive consumer (ids 1) on one topic over one Wire."""

    def __init__(self, url: str, topic: str, subscription: str):
        self.wire = Wire(url)
        self.wire.connect()
        self.sequence = 0
        self.wire.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1)))
        self.wire.expect(Type.PRODUCER_SUCCESS)
        self.wire.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=topic, subscription=subscription, subType=api.CommandSubscribe.Exclusive, consumer_id=1,
            request_id=2)))
        self.wire.expect(Type.SUCCESS)

    def round_trip(self) -> None:
        """Publish one message and receive exactly it (and nothing else), then acknowledge it."""
        body = f"{self.wire.address}-{self.sequence}".encode()
        metadata = api.MessageMetadata(producer_name="fuzz-bystander", sequence_id=self.sequence,
                                       publish_time=int(time.time() * 1000))
        self.wire.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=1)))
        self.wire.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(
            producer_id=1, sequence_id=self.sequence)), build_headers_and_payload(metadata, body))
        self.wire.expect(Type.SEND_RECEIPT)
        message = self.wire.expect(Type.MESSAGE)
        if _payload_of(message) != body:
            raise FuzzFailure(f"{self.wire.address} expected {body!r}, received {_payload_of(message)!r}")
        self.wire.send(api.BaseCommand(type=Type.ACK, ack=api.CommandAck(
            consumer_id=1, ack_type=api.CommandAck.Individual, message_id=[message.command.message.message_id])))
        self.sequence += 1
        if self.wire.pending:
            raise FuzzFailure(f"{self.wire.address}: unexpected frames {[f.command for f in self.wire.pending]}")


class OfficialBystander(threading.Thread):
    """The official client producing and consuming on its own topic, one round trip each time
    `kick()` is called, while sessions run; `finish()` stops it and raises what it saw wrong."""

    def __init__(self, url: str, topic: str):
        super().__init__(daemon=True, name="fuzz-official-bystander")
        self.url, self.topic = url, topic
        self.kicks = threading.Semaphore(0)
        self.stopping = False
        self.round_trips = 0
        self.error: BaseException | None = None
        self.ready = threading.Event()

    def kick(self) -> None:
        self.kicks.release()

    def run(self) -> None:
        client = pulsar.Client(self.url, operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            consumer = client.subscribe(self.topic, "official-bystander")
            producer = client.create_producer(self.topic)
            self.ready.set()
            try:
                self._loop(producer, consumer)
            finally:
                producer.close()
                consumer.close()
        except BaseException as exc:  # noqa: BLE001  (reported by finish() on the test's thread)
            self.error = exc
        finally:
            self.ready.set()
            client.close()

    def _loop(self, producer, consumer) -> None:
        while True:
            self.kicks.acquire()
            if self.stopping:
                return
            body = f"official-{self.round_trips}".encode()
            producer.send(body)
            message = consumer.receive(int(DEADLINE * 1000))
            if message.data() != body:
                raise FuzzFailure(f"official bystander expected {body!r}, received {message.data()!r}")
            consumer.acknowledge(message)
            self.round_trips += 1

    def finish(self) -> int:
        """Stop, and return the number of round trips; raises what went wrong in the thread."""
        self.stopping = True
        self.kicks.release()
        self.join(DEADLINE * 3)
        if self.is_alive():
            raise FuzzFailure("the official bystander did not stop")
        if self.error is not None:
            raise FuzzFailure(f"the official bystander failed: {self.error!r}") from self.error
        return self.round_trips


# ---- the target --------------------------------------------------------------------------------
class StreamModel:
    """What the broker's decoder must make of the bytes a session sends, fed as they are sent:
    `feed` returns 'error' (the broker must close: a frame its decoder refuses, or a first command
    other than CONNECT), 'partial' (it waits for the rest of a frame) or 'complete'. `requests`
    collects the request ids of the commands that decoded cleanly."""

    def __init__(self, connected: bool):
        self.decoder = FrameDecoder(MAX_FRAME)
        self.connected = connected
        self.requests: set[int] = set()

    def feed(self, data: bytes) -> str:
        try:
            for offset in range(len(data)):  # byte by byte: the frames before a bad one still count
                for frame in self.decoder.feed(data[offset:offset + 1]):
                    if not self.connected and frame.command.type != Type.CONNECT:
                        return "error"
                    self.connected = True
                    if (request_id := _request_id(frame.command)) is not None:
                        self.requests.add(request_id)
        except FrameError:
            return "error"
        return "partial" if self.decoder._buf else "complete"


def _request_id(command: api.BaseCommand) -> int | None:
    """The request_id set in the body matching command's type, or None."""
    name = _BODY_FIELDS.get(command.type)
    if name is None or not command.HasField(name):
        return None
    body = getattr(command, name)
    if "request_id" not in body.DESCRIPTOR.fields_by_name or not body.HasField("request_id"):
        return None
    return body.request_id


class Conversation:
    """The replies read on a fuzz connection: which request ids were answered."""

    def __init__(self, wire: Wire):
        self.wire = wire
        self.answered: set[int] = set()

    def ping(self, requests: set[int]) -> bool:
        """PING: the connection answers PONG or is closed (False). While it stays open, every
        request id in requests gets a reply (requests answered asynchronously may come after the
        PONG); FuzzFailure when the broker does neither within the deadline."""
        if not self.wire.send(api.BaseCommand(type=Type.PING, ping=api.CommandPing())):
            return False
        deadline = time.monotonic() + DEADLINE
        pong = False
        while not pong or not requests <= self.answered:
            try:
                frame = self.wire.next_frame(deadline)
            except TimeoutError:
                what = "PONG" if not pong else f"replies to requests {sorted(requests - self.answered)}"
                raise FuzzFailure(f"the broker neither closed the connection nor sent {what}") from None
            if frame is None:
                return False
            pong = pong or frame.command.type == Type.PONG
            if (request_id := _request_id(frame.command)) is not None:
                self.answered.add(request_id)
        return True


class FuzzTarget:
    """A broker in a thread of this process plus its bystanders; `run_session` checks one session."""

    def __init__(self, data_dir: Path):
        self.errors = ErrorLog().install()
        self.broker = BrokerThread(data_dir, maxMessageSize=str(MAX_MESSAGE_SIZE)).start()
        self.url = self.broker.url
        tag = uuid.uuid4().hex[:8]
        self.raw_topic, self.official_topic, self.fresh_topic = (
            f"persistent://public/default/bystander-{what}-{tag}" for what in ("raw", "official", "fresh"))
        self.bystander_topics = {self.raw_topic, self.official_topic, self.fresh_topic}
        self.raw = RawClient(self.url, self.raw_topic, "raw-bystander")
        self.official = OfficialBystander(self.url, self.official_topic)
        self.official.start()
        self.official.ready.wait(DEADLINE * 3)
        self.sessions = 0
        self.outcomes: collections.Counter = collections.Counter()  # how sessions ended (see _converse)

    # -- broker-side state, read on the broker's loop
    def _task_set(self) -> set:
        return self.broker.run(lambda: set(asyncio.all_tasks(self.broker.loop)))

    def _bystander_tasks(self) -> set:
        return self.broker.run(lambda: {t for c in self.broker.broker.connections for t in c._tasks._tasks})

    def _has_connection(self, address: str) -> bool:
        return self.broker.run(lambda: any(c.peer_address == address for c in self.broker.broker.connections))

    def _leaked_tasks(self, before: set) -> list[str]:
        tasks = self._task_set() - before - self._bystander_tasks()
        current = {t for t in tasks if not t.done() and "BrokerThread.run" not in repr(t.get_coro())}
        return sorted(repr(t.get_coro()) for t in current)

    def _orphans(self) -> list[str]:
        """Producers (attached or queued for exclusive access) and consumers whose connection the
        broker no longer has."""
        def scan():
            broker = self.broker.broker
            live = broker.connections
            found = []
            for topic in [*broker.topics.values(), *broker.non_persistent_topics.values()]:
                access = getattr(topic, "access", None)
                producers = [*topic.producers.values(), *([access.exclusive] if access and access.exclusive else []),
                             *(p for p, _ in (access.waiting if access else []))]
                consumers = [c for sub in topic.subscriptions.values() for c in sub.consumers]
                found += [f"{topic.name}: {x!r}" for x in (*producers, *consumers) if x.connection not in live]
            return found
        return self.broker.run(scan)

    def _delete_fuzz_topics(self) -> None:
        async def delete():
            broker = self.broker.broker
            names = [*broker.topics, *broker.non_persistent_topics]
            for name in names:
                if name not in self.bystander_topics:
                    await broker.topic_admin.delete(TopicName.parse(name), force=True)
        self.broker.call(delete())

    # -- one session
    def run_session(self, session: Session | PairSession) -> None:
        """Run one session (or two at once, their frames interleaved, on two connections) and
        check every property; raises FuzzFailure naming what broke."""
        self.sessions += 1
        errors_before = len(self.errors.records)
        before = self._task_set()
        self.official.kick()
        runs = [(Wire(self.url), s) for s in (session.sessions if isinstance(session, PairSession) else (session,))]
        try:
            self._interleave(runs)
        finally:
            for wire, _ in runs:
                wire.close()
        try:
            for wire, _ in runs:
                wait_for(lambda address=wire.address: not self._has_connection(address),
                         "the broker to forget the fuzz connection", timeout=DEADLINE)
            orphans = wait_for_value(lambda: _unknown(self._orphans()), DEADLINE)
            if orphans:
                raise FuzzFailure(f"producers or consumers of closed connections are still attached: {orphans}")
        finally:
            self._delete_fuzz_topics()  # also after a failure: the next example starts from the same state
        leaked = wait_for_value(lambda: self._leaked_tasks(before), DEADLINE)
        if leaked:
            raise FuzzFailure(f"tasks left on the broker's loop: {leaked}")
        gc.collect(1)  # a coroutine dropped without being awaited warns when it is collected
        self._check_no_errors(errors_before)
        self.raw.round_trip()
        self.fresh_round_trip()

    def _interleave(self, runs: list) -> None:
        """Step every (wire, session) one run of frames at a time, in turn, until all have ended."""
        steppers = [self._converse(wire, session, first=i == 0) for i, (wire, session) in enumerate(runs)]
        while steppers:
            for stepper in list(steppers):
                try:
                    next(stepper)
                except StopIteration as end:
                    self.outcomes[end.value] += 1
                    steppers.remove(stepper)

    def _converse(self, wire: Wire, session: Session, first: bool = True):
        """Send the session's frames, yielding after each run of them (so another session can go
        in between), and check the broker's answers. Returns how it ended: 'refused' (closed after
        a bad frame), 'closed' (closed by a command), 'open', 'stalled' (in the middle of a frame)
        or 'hung up' (we closed without waiting for answers). The setup of a session that is not
        the first may be refused (the first one's consumer may hold the subscription)."""
        if session.connect:
            wire.connect()
            if session.setup:
                self._setup(wire, session.sub_type, must_succeed=first)
        model = StreamModel(session.connect)
        conversation = Conversation(wire)
        state = "complete"
        for data, barrier in session.groups():
            yield
            if not wire.send_raw(data):
                return "closed"
            state = model.feed(data)
            if state == "error":
                self._expect_close(wire, "a frame the decoder refuses, or a command before CONNECT")
                return "refused"
            if barrier and state == "complete" and not self._barrier(conversation):
                return "closed"
        if session.abrupt:
            wire.close()
            return "hung up"
        if state != "complete":
            return "stalled"
        return "open" if conversation.ping(model.requests) else "closed"

    def _barrier(self, conversation: Conversation) -> bool:
        """Let what was sent take effect before the next frames: PONG, publishes persisted, PONG
        (so MESSAGEs of those publishes can be acknowledged, redelivered or sought next).
        False when the broker closed the connection."""
        if not conversation.ping(set()):
            return False
        address = conversation.wire.address
        wait_for(lambda: not self._pending_publishes(address), "the fuzz connection's publishes to persist",
                 timeout=DEADLINE)
        return conversation.ping(set())

    def _pending_publishes(self, address: str) -> int:
        return self.broker.run(lambda: sum(c.pending_publishes for c in self.broker.broker.connections
                                           if c.peer_address == address))

    def _setup(self, wire: Wire, sub_type: int, must_succeed: bool = True) -> None:
        """A producer and a consumer with permits on the setup topic, so SEND, FLOW, ACK, SEEK, ...
        reach real objects. Unless must_succeed, the SUBSCRIBE may be refused."""
        wire.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=SETUP_TOPIC, producer_id=SETUP_PRODUCER_ID, request_id=1 << 40)))
        wire.expect(Type.PRODUCER_SUCCESS)
        wire.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
            topic=SETUP_TOPIC, subscription="fuzz-sub", subType=sub_type, consumer_id=SETUP_CONSUMER_ID,
            request_id=(1 << 40) + 1, initialPosition=api.CommandSubscribe.Earliest)))
        if must_succeed:
            wire.expect(Type.SUCCESS)
        else:
            wire.expect_one_of(Type.SUCCESS, Type.ERROR)
        wire.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(
            consumer_id=SETUP_CONSUMER_ID, messagePermits=1000)))

    def _expect_close(self, wire: Wire, why: str) -> None:
        deadline = time.monotonic() + DEADLINE
        try:
            while wire.next_frame(deadline) is not None:
                pass
        except TimeoutError:
            raise FuzzFailure(f"the broker kept the connection open after {why}") from None

    def _check_no_errors(self, errors_before: int) -> None:
        new = _unknown(self.errors.records[errors_before:])
        if new:
            raise FuzzFailure("the broker logged errors:\n" + "\n".join(new))

    def fresh_round_trip(self) -> None:
        """A new connection: CONNECT, producer, consumer, one message there and back."""
        client = RawClient(self.url, self.fresh_topic, "fresh")
        try:
            client.round_trip()
        finally:
            client.wire.close()

    def official_round_trip(self) -> None:
        """A new official client produces and consumes one message on a topic of its own."""
        topic = f"persistent://public/default/bystander-final-{uuid.uuid4().hex[:8]}"
        client = pulsar.Client(self.url, operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            consumer = client.subscribe(topic, "final")
            try:
                producer = client.create_producer(topic)
                try:
                    producer.send(b"after the fuzz")
                    message = consumer.receive(int(DEADLINE * 1000))
                finally:
                    producer.close()
            finally:
                consumer.close()
            if message.data() != b"after the fuzz":
                raise FuzzFailure(f"the official client received {message.data()!r}")
        finally:
            client.close()

    def finish(self) -> int:
        """End the run: the official bystander stops (raising what it saw), the raw one checks once
        more, a new official client completes a round trip. Returns the bystander's round trips."""
        try:
            round_trips = self.official.finish()
            self.raw.round_trip()
            self.official_round_trip()
            gc.collect()
            self._check_no_errors(0)
            return round_trips
        finally:
            self.close()

    def close(self) -> None:
        self.raw.wire.close()
        if self.official.is_alive():
            self.official.stopping = True
            self.official.kicks.release()
            self.official.join(DEADLINE)
        self.broker.stop()
        self.errors.remove()


def wait_for_value(probe, timeout: float):
    """probe() until it returns something falsy (then that) or timeout passes (then the last value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if not value or time.monotonic() >= deadline:
            return value
        time.sleep(0.01)  # the poll interval of this deadline-bounded wait


# ---- running a property -------------------------------------------------------------------------
FUZZ_SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck), "print_blob": True}


def run_sessions(target: FuzzTarget, strategy: st.SearchStrategy, max_examples: int,
                 **extra_settings) -> int:
    """Check every property over max_examples sessions drawn from strategy; returns how many ran."""
    ran = 0

    @settings(max_examples=max_examples, **FUZZ_SETTINGS, **extra_settings)
    @given(strategy)
    def check(session) -> None:
        nonlocal ran
        ran += 1
        target.run_session(session)

    check()
    return ran

