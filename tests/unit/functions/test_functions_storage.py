"""What the worker keeps on disk (real files in tmp_path): function metadata across a reload, a
damaged file named in the error, packages staged, committed under their file name and removed."""
from __future__ import annotations

import pytest

from minipulsar.functions.errors import InvalidFunctionError
from minipulsar.functions.metadata import FunctionRecord, MetadataStore
from minipulsar.functions.packages import PackageStore, package_file_name


async def _chunks(*parts: bytes):
    for part in parts:
        yield part


async def test_metadata_survives_a_reload(tmp_path):
    store = MetadataStore(tmp_path / "functions" / "metadata.json")
    record = FunctionRecord(config={"tenant": "t", "namespace": "n", "name": "f", "parallelism": 2}, version=3,
                            create_time=17, function_id="uuid", package="packages/t/n/f/v3/f.py", stopped={1})
    store.records[record.fqfn] = record
    await store.save()
    again = MetadataStore(tmp_path / "functions" / "metadata.json")
    await again.load()
    loaded = again.get("t/n/f")
    assert (loaded.version, loaded.create_time, loaded.package, loaded.stopped) == (3, 17, record.package, {1})
    assert loaded.instance_state(1) == "STOPPED" and loaded.instance_state(0) == "RUNNING"
    assert again.names_in("t", "n") == ["f"] and not (tmp_path / "functions" / "metadata.json.tmp").exists()


async def test_a_damaged_metadata_file_is_named(tmp_path):
    (tmp_path / "metadata.json").write_text("{not json")
    with pytest.raises(ValueError, match="metadata.json is damaged"):
        await MetadataStore(tmp_path / "metadata.json").load()


async def test_packages_are_staged_committed_and_removed(tmp_path):
    store = PackageStore(tmp_path / "functions" / "packages")
    staged = await store.stage_upload(_chunks(b"def process(i):\n", b"    return i\n"), "mine.py")
    relative = await store.commit(staged, "t/n/f", 0, "mine.Thing")
    assert relative == "packages/t/n/f/v0/mine.py"
    assert (tmp_path / "functions" / relative).read_bytes() == b"def process(i):\n    return i\n"
    assert not staged.path.parent.exists()
    unnamed = await store.stage_upload(_chunks(b"x"), None)
    assert (await store.commit(unnamed, "t/n/f", 1, "exclamation.Exclaim")).endswith("v1/exclamation.py")
    source = tmp_path / "local.py"
    source.write_text("y")
    from_url = await store.stage_url(source.as_uri())
    assert from_url.file_name == "local.py" and from_url.path.read_text() == "y"
    await store.discard(from_url)
    assert not from_url.path.exists()
    with pytest.raises(InvalidFunctionError, match="Function Package url is not valid"):
        await store.stage_url("function://public/default/pkg@1")
    with pytest.raises(InvalidFunctionError, match="when getting Function package from"):
        await store.stage_url((tmp_path / "absent.py").as_uri())
    await store.remove_function("t/n/f")
    assert not (tmp_path / "functions" / "packages" / "t" / "n" / "f").exists()


def test_package_names():
    assert package_file_name("dir/exclamation.py", "x.Y") == "exclamation.py"
    assert package_file_name(None, "exclamation.Exclaim") == "exclamation.py"
    assert package_file_name("", "plain") == "plain.py"
