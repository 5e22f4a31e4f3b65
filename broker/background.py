"""Background tasks an owner starts and must cancel or wait for when it closes.

One place to spawn a task, keep a reference to it (the event loop keeps only weak ones), and log
its failure, which would otherwise surface only as "Task exception was never retrieved".
"""
from __future__ import annotations

import asyncio
import logging
from typing import Coroutine


class BackgroundTasks:
    """owner: named in the log line of a failed task; log: the owner module's logger."""

    def __init__(self, owner: object, log: logging.Logger):
        self._owner = owner
        self._log = log
        self._tasks: set[asyncio.Task] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine) -> asyncio.Task:
        """Run coro on the running loop; a failure other than cancellation is logged with its traceback."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("%s: background task failed", self._owner, exc_info=task.exception())

    def cancel(self) -> None:
        """Cancel every running task (they finish on a later loop turn)."""
        for task in list(self._tasks):
            task.cancel()

    async def wait(self) -> None:
        """Wait until every task running now has finished, whatever its outcome."""
        await asyncio.gather(*self._tasks, return_exceptions=True)
