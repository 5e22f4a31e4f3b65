"""A TCP proxy on loopback that can simulate a network partition: blackhole() stops forwarding in
both directions without closing anything (the peers see silence, not a reset, as when a cable or a
route goes away); heal() lets traffic flow again.

While blackholed, the proxy reads nothing more, so the senders' socket buffers fill up as they
would against an unreachable peer; connections accepted meanwhile are held, as SYNs would be
retransmitted, and are connected to the target at heal(). At heal() the connections that were open
when the partition began are reset, as the first packet after a real partition meets the reset of
an endpoint that has since given up; data the proxy held for them is dropped, as the network
dropped it.

The proxy runs its own event loop in a thread, so both blocking tests (the official client) and
asyncio tests (the bundled client) can use it.
"""
from __future__ import annotations

import asyncio
import threading


class BlackholeProxy:
    """listen (host, port) -> target (host, port). start() before use, stop() at the end."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]):
        self.listen, self.target = listen, target
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._open: asyncio.Event | None = None
        self._server: asyncio.AbstractServer | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._caught: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()  # open when blackholed
        self.accepted = 0  # connections accepted so far

    @property
    def url(self) -> str:
        return f"pulsar://{self.listen[0]}:{self.listen[1]}"

    def start(self) -> "BlackholeProxy":
        self._thread.start()
        self._call(self._start())
        return self

    async def _start(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self._server = await asyncio.start_server(self._accept, *self.listen)

    def blackhole(self) -> None:
        """Stop forwarding; nothing is closed."""
        self._call(self._blackhole())

    def heal(self) -> None:
        """Reset the connections the partition caught, then forward again."""
        self._call(self._heal())

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _blackhole(self) -> None:
        self._open.clear()
        self._caught = set(self._pairs)

    async def _heal(self) -> None:
        for pair in self._caught:
            for writer in pair:
                writer.transport.abort()
        self._caught = set()
        self._open.set()

    async def _stop(self) -> None:
        self._server.close()
        for pair in list(self._pairs):
            for writer in pair:
                writer.transport.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        await self._open.wait()  # a connection made during the partition waits for the heal
        try:
            target_reader, target_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        pair = (client_writer, target_writer)
        self._pairs.add(pair)
        try:
            await asyncio.gather(self._pipe(client_reader, target_writer), self._pipe(target_reader, client_writer))
        finally:
            self._pairs.discard(pair)
            for writer in pair:
                writer.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self._open.wait()  # blocked here, the proxy reads nothing: buffers fill up
                data = await reader.read(65536)
                if not data:
                    break
                await self._open.wait()
                if writer.transport.is_closing():
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()
