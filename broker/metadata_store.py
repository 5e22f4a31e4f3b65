"""Broker metadata that is not a ledger: partitioned-topic metadata, kept in one JSON file.

Written atomically (temporary file, fsync, rename, fsync of the folder) off the event loop, so a
crash leaves either the old or the new file; the folder itself is created durably (its parents
synced), so a power loss during the first boot does not take it with it. Pulsar keeps the same facts in its metadata store
(ZooKeeper) under /admin/partitioned-topics.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from minipulsar.storage import make_dirs_durably


class MetadataStore:
    """path: the JSON file; values are plain JSON types."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.data: dict = {}

    def load(self) -> None:
        """Read the file if it exists; raises ValueError naming the file when it is not valid JSON."""
        if not self.path.exists():
            return
        try:
            self.data = json.loads(self.path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"metadata file {self.path} is corrupt: {exc}") from exc

    async def save(self) -> None:
        snapshot = json.dumps(self.data, sort_keys=True, indent=1)
        await asyncio.to_thread(self._write, snapshot)

    def _write(self, text: str) -> None:
        make_dirs_durably(str(self.path.parent))
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
