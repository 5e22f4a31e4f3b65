"""The function worker's files across a power loss (tools/faultfs loses what was not synced,
directory entries included): a function's record, its package and its state, each written into
folders that did not exist before, are all there after the power goes."""
from __future__ import annotations

import asyncio

from minipulsar.functions.metadata import FunctionRecord, MetadataStore
from minipulsar.functions.packages import PackageStore
from minipulsar.functions.state import StateTable, state_path

FQFN = "public/default/exclaim"
CONFIG = {"tenant": "public", "namespace": "default", "name": "exclaim", "parallelism": 1}


async def _chunks(data: bytes):
    yield data


def test_a_function_record_survives_a_power_loss(ffs):
    path = ffs.mountpoint / "data" / "functions" / "metadata.json"
    store = MetadataStore(path)
    store.records[FQFN] = FunctionRecord(CONFIG, 0, 1_700_000_000_000, "id-1", "packages/x.py")
    asyncio.run(store.save())
    ffs.power_loss()
    again = MetadataStore(path)
    asyncio.run(again.load())
    assert again.get(FQFN).config == CONFIG


def test_a_committed_package_survives_a_power_loss(ffs):
    packages = PackageStore(ffs.mountpoint / "data" / "functions" / "packages")

    async def upload() -> str:
        staged = await packages.stage_upload(_chunks(b"def process(x): return x\n"), "exclaim.py")
        return await packages.commit(staged, FQFN, 0, "exclaim.Exclaim")
    relative = asyncio.run(upload())
    ffs.power_loss()
    assert (ffs.mountpoint / "data" / "functions" / relative).read_bytes() == b"def process(x): return x\n"


def test_function_state_survives_a_power_loss(ffs):
    path = state_path(ffs.mountpoint / "data" / "functions" / "state", FQFN)
    table = StateTable(path)
    table.put("greeting", b"hello")
    table.close()
    ffs.power_loss()
    table = StateTable(path)
    try:
        assert table.get("greeting").value == b"hello"
    finally:
        table.close()
