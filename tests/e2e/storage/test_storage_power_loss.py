"""Power loss under a real broker process: its data dir on faultfs, the official client producing,
SIGKILL + `power-loss`, a restart on the same mount, and every acknowledged message must be there,
in order.

A SIGKILL alone (tests/e2e) cannot lose the page cache; here everything the broker did not fsync
(file data) or fsync the directory of (names) is gone after the power loss.

Appends are durable once the journal (data/ledgers/journal) has synced them; segments are written
behind it and synced at checkpoints (flushInterval), so a power loss may take them back to the last
checkpoint and the restart replays the journal into them.
"""
from __future__ import annotations

import os
import threading

import pulsar
import pytest
import requests

from minipulsar.storage.segment import fsync_dir
from tests.e2e.storage.broker_on_faultfs import (SUBSCRIPTION, AsyncProducer, BrokerOnFaultFS, check_acked_survived, client,
                                                 close_without_broker, consume_all, produce, subscribe)
from tests.helpers import storage_checkpoints, wait_for

pytestmark = pytest.mark.timeout(90)

TOPIC = "persistent://public/default/power"
# What the broker creates under --data-dir at its first boot (storage's data dir is data/ledgers,
# whose own folder of ledgers is data/ledgers/ledgers; the metadata store writes data/metadata).
LAYOUT = ("data", "data/ledgers", "data/ledgers/ledgers", "data/metadata")



def make_durable(m, dirs=LAYOUT) -> None:
    """Create ``dirs`` under the mount and fsync them and their parents, bottom up."""
    for d in dirs:
        os.makedirs(m / d, exist_ok=True)
    for d in sorted({*dirs, *(os.path.dirname(d) for d in dirs)}, key=lambda d: -d.count("/") - (d != "")):
        fsync_dir(m / d)


@pytest.fixture
def broker(ffs, tmp_path, request):
    b = BrokerOnFaultFS(ffs, tmp_path)
    yield b
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(f"--- broker log tail ({b.log_path}) ---\n" + b.log_tail())
    b.kill_for_cleanup()


def survivors_report(report: dict) -> str:
    return f"power loss dropped {report['lost_count']} paths: {report['lost_paths'][:12]}"


@pytest.mark.parametrize("made_durable", [
    pytest.param((), id="nothing-premade"),
    pytest.param(("data",), id="operator-made-data-dir"),
    pytest.param("data", id="operator-made-data-dir-just-now"),
])
def test_power_loss_during_first_boot_keeps_acknowledged_messages(ffs, broker, made_durable):
    """The issue's case: the first topic is created and messages are acknowledged, then the power
    goes before anything else syncs the parents of data/ledgers, data/metadata, ... A string names
    a folder the operator made just before the start and nothing synced yet (its own entry
    included: the broker syncs the data dir's ancestors at start)."""
    if isinstance(made_durable, str):
        os.makedirs(ffs.mountpoint / made_durable)
    else:
        make_durable(ffs.mountpoint, made_durable)
    broker.start()
    subscribe(broker.url, TOPIC)
    acked = produce(broker.url, TOPIC, 20)
    report = broker.power_loss()
    broker.start()
    found = consume_all(broker.url, TOPIC)
    assert found == acked, f"{len(acked)} acknowledged, {len(found)} found; {survivors_report(report)}"


def test_power_loss_keeps_acknowledged_messages_once_the_layout_is_durable(ffs, tmp_path):
    """With the first-boot directories made durable by hand, the broker's own discipline (topic
    folder, NAME, journal, segments behind it, checkpoints, cursor slots) holds: after a checkpoint
    only the LOCK file's pid and the unsynced offset indexes are unsynced, and every acknowledged
    message survives the power loss."""
    make_durable(ffs.mountpoint)
    broker = BrokerOnFaultFS(ffs, tmp_path, env={"MINIPULSAR_flushInterval": "200"})
    try:
        broker.start()
        subscribe(broker.url, TOPIC)
        acked = produce(broker.url, TOPIC, 20)
        wait_for(lambda: ffs.stats()["bytes_unsynced"] <= 64, "a checkpoint to sync the segments")
        check_survivors(broker, acked)
    finally:
        broker.kill_for_cleanup()


def check_survivors(broker, acked) -> None:
    """Power loss, restart: every acknowledged message is there, and the topic goes on."""
    report = broker.power_loss()
    broker.start()
    found = consume_all(broker.url, TOPIC)
    assert found == acked, survivors_report(report)
    # The topic goes on after recovery.
    more = produce(broker.url, TOPIC, 5, prefix="after")
    assert consume_all(broker.url, TOPIC, subscription="other") == acked + more


@pytest.mark.parametrize("torn", [False, True], ids=["clean-cut", "torn-write"])
def test_power_loss_while_a_journal_sync_is_in_flight(ffs, broker, torn):
    """The power goes while the journal syncs a group: its write reached the file (the FUSE write
    of pwritev(RWF_DSYNC) comes before the FUSE fsync) but not the disk. With torn, a prefix of
    that write survives and the replay must stop at the torn record."""
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    acked = produce(broker.url, TOPIC, 10)
    ffs.trap("fdatasync", "data/ledgers/journal/*.jnl", nth=2, when="before")  # 2nd group after this
    producer = AsyncProducer(broker.url, TOPIC)
    try:
        producer.send(200, prefix="async")
        (fired,) = ffs.wait_trap(timeout=20)
        report = broker.power_loss(torn=torn, seed=3)
    finally:
        producer.close()
    acked += producer.acked
    sent = [f"m-{i}".encode() for i in range(10)] + producer.sent
    if torn:
        (seg,) = [t for t in report["torn"] if (t["path"] or "").endswith(".jnl")]
        assert 0 < seg["kept"] < seg["of"], report
    broker.start()
    found = consume_all(broker.url, TOPIC)
    check_acked_survived(acked, sent, found)
    assert len(found) < len(sent), "the trap should have cut the run short"


def test_power_loss_during_roll_over(ffs, tmp_path):
    """Ledgers of five entries: twelve messages sent one by one seal ledgers 0 and 1 (their offset
    indexes are written behind the journal but not synced, by design), then the power goes right
    after the next roll-over created its segment. The indexes must be rebuilt from the segments."""
    make_durable(ffs.mountpoint)
    broker = BrokerOnFaultFS(ffs, tmp_path, env={"MINIPULSAR_managedLedgerMaxEntriesPerLedger": "5"})
    try:
        broker.start()
        subscribe(broker.url, TOPIC)
        acked = produce(broker.url, TOPIC, 12)
        def sealed_indexes():  # written behind the journal, soon after the roll-overs
            sealed = {p: size for p, size in ffs.tree().items() if p.endswith(".idx")}
            return sealed if len(sealed) >= 2 else None
        sealed = wait_for(sealed_indexes, "two sealed ledgers' offset indexes")
        assert len(sealed) == 2, ffs.tree()
        ffs.trap("create", "data/ledgers/ledgers/*.seg", nth=1, when="after")
        producer = AsyncProducer(broker.url, TOPIC)
        try:
            producer.send(50, prefix="async")
            (fired,) = ffs.wait_trap(timeout=20)
            report = broker.power_loss()
        finally:
            producer.close()
        durable = ffs.tree()
        assert not any(durable.get(p) for p in sealed), f"the unsynced indexes were not lost: {durable}"
        broker.start()
        found = consume_all(broker.url, TOPIC)
        sent = [f"m-{i}".encode() for i in range(12)] + producer.sent
        check_acked_survived(acked + producer.acked, sent, found)
        assert len(found) >= 12, survivors_report(report)
    finally:
        broker.kill_for_cleanup()


def test_acknowledged_consumption_comes_back_at_least_once(ffs, broker):
    """Acks persisted by the cursor may be redelivered after a power loss, never skipped."""
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    acked = produce(broker.url, TOPIC, 20)
    first = consume_all(broker.url, TOPIC, ack_first=10, quiet_ms=800)
    assert first == acked
    broker.power_loss()
    broker.start()
    again = consume_all(broker.url, TOPIC)
    assert again == acked[len(acked) - len(again):] and len(again) >= 10, again


@pytest.mark.parametrize("cut", ["acknowledged", "at-rename"])
def test_partitioned_topic_metadata_survives_a_power_loss(ffs, broker, cut):
    """Acknowledged (204), a partitioned topic's metadata survives; cut while its metadata file is
    renamed into place, the topic is there with all its partitions or not at all."""
    make_durable(ffs.mountpoint, LAYOUT[:3])  # everything but data/metadata, which the broker creates
    broker.start()
    url = broker.web_url + "/admin/v2/persistent/public/default"
    if cut == "at-rename":
        ffs.trap("rename", "data/metadata/*", nth=1, when="after")
        unanswered("PUT", url + "/orders/partitions", 3)
        ffs.wait_trap(timeout=20)
    else:
        r = requests.put(url + "/orders/partitions", json=3, timeout=10)
        assert r.status_code == 204, r.text
        assert requests.get(url + "/partitioned", timeout=10).json() == ["persistent://public/default/orders"]
    report = broker.power_loss()
    broker.start()
    url = broker.web_url + "/admin/v2/persistent/public/default"  # a new web port
    listed = requests.get(url + "/partitioned", timeout=10).json()
    if cut == "acknowledged" or listed:
        assert listed == ["persistent://public/default/orders"], survivors_report(report)
        partitions = requests.get(url + "/orders/partitions", timeout=10).json()["partitions"]
        assert partitions == 3, survivors_report(report)


def unanswered(method: str, url: str, body) -> None:
    """A request, in a thread, that the power loss cuts off: the broker dies under it, so its
    connection error is the expected end, not a failure."""
    def send():
        try:
            requests.request(method, url, json=body, timeout=30)
        except requests.RequestException:
            pass
    threading.Thread(target=send, daemon=True).start()




def test_deleted_topic_stays_deleted_after_a_power_loss(ffs, broker):
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    produce(broker.url, TOPIC, 5)
    url = broker.web_url + "/admin/v2/persistent/public/default"
    r = requests.delete(url + "/power", params={"force": "true"}, timeout=10)
    assert r.status_code == 204, r.text
    assert "persistent://public/default/power" not in requests.get(url, timeout=10).json()
    report = broker.power_loss()
    broker.start()
    url = broker.web_url + "/admin/v2/persistent/public/default"  # a new web port
    listed = requests.get(url, timeout=10).json()
    assert "persistent://public/default/power" not in listed, survivors_report(report)


def test_deleted_subscription_stays_deleted_after_a_power_loss(ffs, broker):
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    subscribe(broker.url, TOPIC, subscription="gone")
    produce(broker.url, TOPIC, 5)
    url = broker.web_url + "/admin/v2/persistent/public/default/power"
    r = requests.delete(url + "/subscription/gone", timeout=10)
    assert r.status_code == 204, r.text
    assert requests.get(url + "/subscriptions", timeout=10).json() == [SUBSCRIPTION]
    report = broker.power_loss()
    broker.start()
    subscribe(broker.url, TOPIC)  # loads the topic
    url = broker.web_url + "/admin/v2/persistent/public/default/power"  # a new web port
    listed = requests.get(url + "/subscriptions", timeout=10).json()
    assert listed == [SUBSCRIPTION], survivors_report(report)


def test_eio_on_a_journal_sync_is_never_acknowledged(ffs, broker):
    """fsyncgate: the journal's sync fails once with EIO (faultfs forgets the failed pages as Linux
    does). The broker must fail that publish (the client resends it), never retry the sync as a
    success, and continue on a new journal file and a new ledger; after a power loss every
    acknowledged message is there, once."""
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    acked = produce(broker.url, TOPIC, 3)
    ffs.fail("fdatasync", "data/ledgers/journal/*.jnl", "EIO", count=1)
    acked += produce(broker.url, TOPIC, 5, prefix="after-eio")
    (injected,) = ffs.stats()["failures_injected"]
    assert injected["op"] == "fdatasync" and injected["error"] == "EIO"
    log = broker.log_path.read_text()
    assert "operations failed ([Errno 5]" in log and "moving to a new journal file" in log  # it was told
    internal = requests.get(broker.web_url + "/admin/v2/persistent/public/default/power/internalStats", timeout=10).json()
    assert internal["addEntryErrors"] == 1 and len(internal["fencedLedgers"]) == 1, internal
    metrics = requests.get(broker.web_url + "/metrics", timeout=10).text
    assert "minipulsar_storage_journal_write_errors_total{cluster=\"standalone\"} 1.0" in metrics
    assert 'pulsar_ml_AddEntryErrors{cluster="standalone",namespace="public/default",topic="persistent://public/default/power"} 1.0' in metrics
    report = broker.power_loss()
    broker.start()
    assert consume_all(broker.url, TOPIC) == acked, survivors_report(report)


def produce_keyed(url: str, topic: str, count: int, keys: int) -> list[tuple[str, bytes]]:
    c = client(url)
    try:
        producer = c.create_producer(topic, batching_enabled=False)
        sent = []
        for i in range(count):
            key, payload = f"k{i % keys}", f"v-{i}".encode()
            producer.send(payload, partition_key=key)
            sent.append((key, payload))
        return sent
    finally:
        c.close()


def read_compacted(url: str, topic: str) -> dict[str, bytes]:
    c = client(url)
    try:
        reader = c.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        latest = {}
        while True:
            try:
                msg = reader.read_next(1500)
            except pulsar.Timeout:
                return latest
            latest[msg.partition_key()] = msg.data()
    finally:
        c.close()


@pytest.mark.parametrize("cut", ["after-compaction", "at-compacted-rename", "at-cursor-move"])
def test_compacted_view_survives_a_power_loss(ffs, broker, cut):
    """A compaction writes compacted-<id>.ledger.tmp, fsyncs it, renames it, fsyncs the folder, then
    persists the __compaction cursor naming it. Cut after all of it, right after the rename (the
    cursor does not name the file yet: the restart deletes it and readers see the whole topic), or
    while the cursor's new slot is synced (either slot may win); every way a read_compacted reader
    gets every key's latest value."""
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    sent = produce_keyed(broker.url, TOPIC, 30, keys=4)
    latest = {key: payload for key, payload in sent}
    base = broker.web_url + "/admin/v2/persistent/public/default/power"
    if cut == "at-compacted-rename":
        ffs.trap("rename", "*compacted-*.ledger", nth=1, when="after")
    elif cut == "at-cursor-move":
        ffs.trap("fdatasync", "data/ledgers/ledgers/*/cursors/__compaction.cur.*", nth=1, when="before")
    assert requests.put(base + "/compaction", timeout=10).status_code == 204
    if cut != "after-compaction":
        ffs.wait_trap(timeout=20)
    else:
        wait_for(lambda: requests.get(base + "/compaction", timeout=10).json()["status"] == "SUCCESS",
                 "compaction to finish")
        assert any("compacted-" in p for p in ffs.tree(durable=True))
    report = broker.power_loss()
    broker.start()
    assert read_compacted(broker.url, TOPIC) == latest, survivors_report(report)
    assert consume_all(broker.url, TOPIC) == [payload for _key, payload in sent]


def test_power_loss_during_a_cursor_persist(ffs, broker):
    """The power goes while a subscription's acks are being persisted (the slot's fdatasync):
    the restart finds the earlier slot or the new one, never a torn state, and every message not
    acknowledged before comes back (at least once)."""
    make_durable(ffs.mountpoint)
    broker.start()
    subscribe(broker.url, TOPIC)
    acked = produce(broker.url, TOPIC, 20)
    ffs.trap("fdatasync", f"data/ledgers/ledgers/*/cursors/{SUBSCRIPTION}.cur.*", nth=1, when="before")
    consumer_client = client(broker.url)
    try:
        consumer = consumer_client.subscribe(TOPIC, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(10):
            consumer.acknowledge(consumer.receive(10000))
        ffs.wait_trap(timeout=20)  # the acks' persist reached its sync
        report = broker.power_loss(torn=True, seed=5)
    finally:
        close_without_broker(consumer_client)
    broker.start()
    again = consume_all(broker.url, TOPIC)
    assert again == acked[len(acked) - len(again):] and len(again) >= 10, (again, survivors_report(report))


@pytest.mark.parametrize("cut", ["acknowledged", "at-rename", "dynamic-config-at-rename"])
def test_namespace_policy_and_dynamic_config_writes_survive_a_power_loss(ffs, broker, cut):
    """Policies and dynamic settings go to the metadata store (temporary file, fsync, rename,
    fsync of the folder). Acknowledged (204), they survive; cut at the rename, the store holds the
    old content or the new one, whole, and the broker starts."""
    make_durable(ffs.mountpoint)
    broker.start()
    namespace = broker.web_url + "/admin/v2/namespaces/public/default"
    assert requests.post(namespace + "/messageTTL", json=60, timeout=10).status_code == 204
    config = broker.web_url + "/admin/v2/brokers/configuration/dispatcherMaxReadBatchSize/77"
    if cut == "at-rename":
        ffs.trap("rename", "data/metadata/*", nth=1, when="after")
        unanswered("POST", namespace + "/messageTTL", 120)
        ffs.wait_trap(timeout=20)
    elif cut == "dynamic-config-at-rename":
        ffs.trap("rename", "data/metadata/*", nth=1, when="after")
        unanswered("POST", config, None)
        ffs.wait_trap(timeout=20)
    else:
        assert requests.post(config, timeout=10).status_code == 204
    report = broker.power_loss()
    broker.start()
    namespace = broker.web_url + "/admin/v2/namespaces/public/default"  # a new web port
    ttl = requests.get(namespace + "/messageTTL", timeout=10).json()
    if cut == "acknowledged":
        assert ttl == 60, survivors_report(report)
        dynamic = requests.get(broker.web_url + "/admin/v2/brokers/configuration/values", timeout=10).json()
        assert dynamic.get("dispatcherMaxReadBatchSize") == "77", dynamic
    elif cut == "at-rename":
        assert ttl in (60, 120), survivors_report(report)
    else:
        assert ttl == 60, survivors_report(report)
        dynamic = requests.get(broker.web_url + "/admin/v2/brokers/configuration/values", timeout=10).json()
        assert dynamic.get("dispatcherMaxReadBatchSize") in (None, "77"), dynamic


def test_deduplication_snapshot_cut_keeps_every_message_once(ffs, tmp_path):
    """With deduplication on, the broker snapshots each producer's last sequence id into the
    pulsar.dedup cursor every brokerDeduplicationEntriesInterval entries. Cut while a snapshot is
    synced: after the restart the producer resends from where it was told, and every acknowledged
    message is there exactly once (the replay after the snapshot rebuilds what it missed)."""
    make_durable(ffs.mountpoint)
    broker = BrokerOnFaultFS(ffs, tmp_path, env={"MINIPULSAR_brokerDeduplicationEnabled": "true",
                                                 "MINIPULSAR_brokerDeduplicationEntriesInterval": "5"})
    try:
        broker.start()
        subscribe(broker.url, TOPIC)
        c = client(broker.url)
        producer = c.create_producer(TOPIC, producer_name="dedup-producer", batching_enabled=False)
        acked = []
        for i in range(7):  # one snapshot after the fifth
            producer.send(f"d-{i}".encode(), sequence_id=i + 1)
            acked.append(f"d-{i}".encode())
        ffs.trap("fdatasync", "data/ledgers/ledgers/*/cursors/pulsar%2Ededup.cur.*", nth=1, when="before")
        for i in range(7, 11):  # the next snapshot, after the tenth, is cut
            producer.send_async(f"d-{i}".encode(), None, sequence_id=i + 1)
        ffs.wait_trap(timeout=20)
        report = broker.power_loss()
        close_without_broker(c)
        broker.start()
        c = client(broker.url)
        producer = c.create_producer(TOPIC, producer_name="dedup-producer", batching_enabled=False)
        resend_from = producer.last_sequence_id()  # sequence ids are i + 1: the official client takes
        assert resend_from >= len(acked), (resend_from, survivors_report(report))  # 0 for "unset"
        for i in range(resend_from, 11):
            producer.send(f"d-{i}".encode(), sequence_id=i + 1)
        for i in range(0, 11):  # everything again: the broker drops the duplicates
            producer.send(f"d-{i}".encode(), sequence_id=i + 1)
        c.close()
        found = consume_all(broker.url, TOPIC)
        assert found == [f"d-{i}".encode() for i in range(11)], (str(found), survivors_report(report))
    finally:
        broker.kill_for_cleanup()


def test_eio_on_a_segment_sync_keeps_the_journal(ffs, tmp_path):
    """fsyncgate behind the journal: a checkpoint's sync of a segment fails once with EIO and
    faultfs forgets the failed pages, as Linux does. A later sync of that segment succeeds without
    having written them, so no later checkpoint may be recorded (which would drop the journal that
    still holds those entries); after a power loss every acknowledged message is there."""
    broker = BrokerOnFaultFS(ffs, tmp_path, env={"MINIPULSAR_flushInterval": "200"})
    try:
        make_durable(ffs.mountpoint)
        broker.start()
        subscribe(broker.url, TOPIC)
        ffs.fail("fdatasync", "data/ledgers/ledgers/*.seg", "EIO", count=1)
        acked = produce(broker.url, TOPIC, 5)
        wait_for(lambda: ffs.stats()["failures_injected"], "the segment sync to fail")
        after_failure = storage_checkpoints(broker.web_url)
        acked += produce(broker.url, TOPIC, 5, prefix="after-eio")
        # Checkpoints are due every 200 ms: give several the chance to (wrongly) succeed.
        wait_for(lambda: "no checkpoint until a restart" in broker.log_path.read_text(), "the refusal to be logged")
        acked += produce(broker.url, TOPIC, 5, prefix="later")
        assert storage_checkpoints(broker.web_url) == after_failure
        report = broker.power_loss()
        broker.start()
        assert consume_all(broker.url, TOPIC) == acked, survivors_report(report)
    finally:
        broker.kill_for_cleanup()
