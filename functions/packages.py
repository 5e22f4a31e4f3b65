"""Function packages: the user's code, stored by the worker under its data folder.

A package arrives as the `data` part of a multipart create/update (streamed to disk chunk by
chunk), or as a `url` the worker reads itself: `file:` (a path on the broker's machine, what
`--py file:///path/f.py` sends, as Pulsar's createFunctionWithUrl) or `http(s)://` (downloaded).
It is first staged in <functions>/packages/.staging, then, once the function is accepted, renamed
to <functions>/packages/<tenant>/<namespace>/<name>/v<version>/<file name>: the file keeps its
name, because a `.py` package is imported by its module name (classname "exclamation.Exclaim"
needs exclamation.py), as in Pulsar's Python runtime. A `.zip` (with `<name>/src` and optional
`<name>/deps/*.whl`, Pulsar's layout) or a `.whl` is unpacked by each instance at start.

All file work runs off the event loop (aiofiles); staged and committed files are fsynced.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator
from urllib.parse import unquote, urlparse

import aiofiles
import aiofiles.os

from minipulsar.functions.errors import InvalidFunctionError
from minipulsar.functions.durable_folders import make_folders_durably
from minipulsar.functions.metadata import fsync_folder

CHUNK_BYTES = 1 << 20
STAGING = ".staging"
_fsync = aiofiles.os.wrap(os.fsync)
_rmtree = aiofiles.os.wrap(shutil.rmtree)


@dataclass(frozen=True)
class StagedPackage:
    """A package received but not yet committed: its temporary path and the file name it came
    with (None when the upload named none)."""

    path: Path
    file_name: str | None


def package_file_name(file_name: str | None, class_name: str | None) -> str:
    """The name a package is stored under: the uploaded file's own name (its last path part), or,
    when the upload carries none, the module of class_name plus .py."""
    name = Path(file_name or "").name
    if name in ("", ".", ".."):
        module = (class_name or "function").rpartition(".")[0] or (class_name or "function")
        name = f"{module}.py"
    return name


class PackageStore:
    """root: the packages folder (<data dir>/functions/packages)."""

    def __init__(self, root: Path):
        self.root = root

    async def stage_upload(self, chunks: AsyncIterator[bytes], file_name: str | None) -> StagedPackage:
        """Write an uploaded package to the staging folder; returns it staged (fsynced)."""
        return await self._stage(chunks, Path(file_name).name if file_name else None)

    async def stage_url(self, url: str) -> StagedPackage:
        """Stage the package a `file:` or `http(s)://` URL names; InvalidFunctionError when it cannot
        be read (Pulsar: "Encountered error \"...\" when getting Function package from ...")."""
        parsed = urlparse(url)
        try:
            if parsed.scheme == "file":
                path = Path(unquote(parsed.path))
                return await self._stage(_file_chunks(path), path.name)
            if parsed.scheme in ("http", "https"):
                return await self._stage(_http_chunks(url), Path(parsed.path).name or None)
        except OSError as exc:
            raise InvalidFunctionError(f"Encountered error \"{exc}\" when getting Function package from {url}") from None
        raise InvalidFunctionError(f"Function Package url is not valid. supported url (http/https/file): {url}")

    async def _stage(self, chunks: AsyncIterator[bytes], file_name: str | None) -> StagedPackage:
        folder = self.root / STAGING / uuid.uuid4().hex
        # durably: the package folders are created under it, and a folder that exists is trusted
        await asyncio.to_thread(make_folders_durably, folder)
        path = folder / "package"
        try:
            async with aiofiles.open(path, "wb") as f:
                async for chunk in chunks:
                    await f.write(chunk)
                await f.flush()
                await _fsync(f.fileno())
        except BaseException:
            await _rmtree(folder, ignore_errors=True)
            raise
        return StagedPackage(path, file_name)

    async def commit(self, staged: StagedPackage, fqfn: str, version: int, class_name: str) -> str:
        """Move a staged package to its function's folder, named as package_file_name says;
        returns its path relative to the functions folder (what FunctionRecord.package holds)."""
        folder = self.root.joinpath(*fqfn.split("/"), f"v{version}")
        await asyncio.to_thread(make_folders_durably, folder)
        target = folder / package_file_name(staged.file_name, class_name)
        await aiofiles.os.replace(staged.path, target)
        await fsync_folder(folder)
        await _rmtree(staged.path.parent, ignore_errors=True)
        return str(target.relative_to(self.root.parent))

    async def discard(self, staged: StagedPackage | None) -> None:
        if staged is not None:
            await _rmtree(staged.path.parent, ignore_errors=True)

    async def remove_version(self, relative: str) -> None:
        """Delete the folder of one committed package (an older version after an update)."""
        await _rmtree((self.root.parent / relative).parent, ignore_errors=True)

    async def remove_function(self, fqfn: str) -> None:
        await _rmtree(self.root.joinpath(*fqfn.split("/")), ignore_errors=True)

    async def clear_staging(self) -> None:
        """Forget uploads a crash left half-written."""
        await _rmtree(self.root / STAGING, ignore_errors=True)


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    async with aiofiles.open(path, "rb") as f:
        while chunk := await f.read(CHUNK_BYTES):
            yield chunk


async def _http_chunks(url: str) -> AsyncIterator[bytes]:
    import aiohttp  # only a worker given an http(s) package URL needs the HTTP client

    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
            async with session.get(url) as response:
                if response.status != 200:
                    raise OSError(f"HTTP {response.status}")
                async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                    yield chunk
    except aiohttp.ClientError as exc:
        raise OSError(str(exc) or type(exc).__name__) from exc
