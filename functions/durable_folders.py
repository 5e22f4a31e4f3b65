"""Folders that survive a power loss: a new folder's entry is durable only once its parent
directory is synced (POSIX), so each folder created here is followed by an fsync of its parent."""
from __future__ import annotations

import os
from pathlib import Path


def make_folders_durably(folder: Path) -> None:
    """Create folder and its missing parents top down, syncing each one's parent after it.
    Raises OSError as os.mkdir / os.fsync do."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
        sync_folder(created.parent)


def sync_folder(folder: Path) -> None:
    """fsync a directory: the entries created, renamed or removed in it become durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
