"""Function metadata: what the worker keeps of each function across restarts, as Pulsar's
FunctionMetaData (the FunctionConfig, its version, create time, package location and the
RUNNING/STOPPED state of each instance).

All of it lives in one JSON file, <functions dir>/metadata.json, rewritten whole on each change:
written to a temporary file with aiofiles, fsynced, renamed over the old one and the folder
fsynced, so a crash at any moment leaves the old file or the new one. Reads and writes run off the
event loop (aiofiles' threads). Pulsar keeps this in a compacted system topic
(pulsar/functions/assignments and the metadata topic); docs/compatibility.md says so.
"""
from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import aiofiles
import aiofiles.os

from minipulsar.functions.durable_folders import make_folders_durably, sync_folder

RUNNING, STOPPED = "RUNNING", "STOPPED"  # Pulsar's FunctionMetaData.FunctionState
_fsync = aiofiles.os.wrap(os.fsync)


@dataclass
class FunctionRecord:
    """One function. config: its stored FunctionConfig (minipulsar.functions.config); version: 0 at
    create, +1 per update; create_time: milliseconds since the epoch; function_id: a UUID the
    instances report (Context.get_function_id); package: the package file, relative to the
    functions folder; stopped: ids of instances stopped through the API (Pulsar's instanceStates)."""

    config: dict
    version: int
    create_time: int
    function_id: str
    package: str
    stopped: set[int] = field(default_factory=set)

    @property
    def fqfn(self) -> str:
        """tenant/namespace/name, Pulsar's fully qualified function name."""
        return f"{self.config['tenant']}/{self.config['namespace']}/{self.config['name']}"

    @property
    def parallelism(self) -> int:
        return self.config["parallelism"]

    def instance_state(self, instance_id: int) -> str:
        return STOPPED if instance_id in self.stopped else RUNNING

    def to_json(self) -> dict:
        return {"functionConfig": self.config, "version": self.version, "createTime": self.create_time,
                "functionId": self.function_id, "packagePath": self.package,
                "instanceStates": {str(i): STOPPED for i in sorted(self.stopped)}}

    @classmethod
    def from_json(cls, data: dict) -> "FunctionRecord":
        return cls(config=data["functionConfig"], version=data["version"], create_time=data["createTime"],
                   function_id=data["functionId"], package=data["packagePath"],
                   stopped={int(i) for i, state in data.get("instanceStates", {}).items() if state == STOPPED})


class MetadataStore:
    """The records of every function, by fqfn, in `path` (loaded by load(), saved by save())."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[str, FunctionRecord] = {}

    async def load(self) -> None:
        """Read the file if there is one; raises ValueError naming the file when it does not parse."""
        if not await aiofiles.os.path.exists(self.path):
            return
        async with aiofiles.open(self.path, "rb") as f:
            text = await f.read()
        try:
            data = json.loads(text)
            self.records = {fqfn: FunctionRecord.from_json(record) for fqfn, record in data["functions"].items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"function metadata {self.path} is damaged: {exc!r}") from exc

    async def save(self) -> None:
        """Write every record durably (temporary file, fsync, rename, fsync of the folder)."""
        await asyncio.to_thread(make_folders_durably, self.path.parent)
        body = json.dumps({"functions": {fqfn: r.to_json() for fqfn, r in sorted(self.records.items())}},
                          indent=1).encode()
        temporary = self.path.with_name(self.path.name + ".tmp")
        async with aiofiles.open(temporary, "wb") as f:
            await f.write(body)
            await f.flush()
            await _fsync(f.fileno())
        await aiofiles.os.replace(temporary, self.path)
        await fsync_folder(self.path.parent)

    def get(self, fqfn: str) -> FunctionRecord | None:
        return self.records.get(fqfn)

    def names_in(self, tenant: str, namespace: str) -> list[str]:
        """Names of the functions of tenant/namespace, sorted."""
        return sorted(r.config["name"] for r in self.records.values()
                      if r.config["tenant"] == tenant and r.config["namespace"] == namespace)


async def fsync_folder(folder: Path) -> None:
    """Make a rename or a new file in folder durable."""
    await asyncio.to_thread(sync_folder, folder)
