"""`minipulsar admin ...` run as the user runs it (`python -m minipulsar admin` in a child process)
against an in-process broker's REST API; the `admin` REST fixture, the broker's own state and the
official client check what each command changed. Each child process costs ~0.4 s, so every test
batches several commands."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from minipulsar.cli import parser
from minipulsar.cli.admin.args import byte_size, message_position, relative_seconds
from minipulsar.cli.admin.messages import pretty_hex_dump
from minipulsar.launcher import free_port
from tests import ROOT
from tests.helpers import rest_path, wait_for

TIMEOUT = 60  # seconds a CLI run may take before the test fails


class Cli:
    """`python -m minipulsar admin --admin-url URL ...` in a child process."""

    def __init__(self, url: str):
        self.url = url

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "minipulsar", "admin", "--admin-url", self.url, *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)

    def ok(self, *args: str) -> str:
        """stdout, after checking the run exited with 0 and printed nothing on stderr."""
        result = self.run(*args)
        assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        assert result.stderr == "", result.stderr
        return result.stdout

    def json(self, *args: str):
        return json.loads(self.ok(*args))

    def lines(self, *args: str) -> list[str]:
        return self.ok(*args).splitlines()

    def fails(self, *args: str, reason: str, status: int = 1) -> str:
        """The one stderr line of a failed run, after checking its exit status, that it names
        `reason` and that no traceback was printed."""
        result = self.run(*args)
        assert result.returncode == status, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        assert "Traceback" not in result.stdout + result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and reason in lines[0], result.stderr
        return lines[0]


@pytest.fixture
def cli(broker) -> Cli:
    return Cli(broker.broker.web_service_url)


def short(topic: str) -> str:
    return topic.rsplit("/", 1)[1]


# ---- without a broker ------------------------------------------------------------------------

def admin_verbs() -> dict[str, argparse.ArgumentParser]:
    """'group verb' -> its parser, for every admin verb."""
    def choices(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices
    admin = choices(parser())["admin"]
    return {f"{group} {verb}": verb_parser for group, group_parser in choices(admin).items()
            for verb, verb_parser in choices(group_parser).items()}


def test_every_verb_has_help_and_pulsar_admin_names():
    verbs = admin_verbs()
    for name, verb_parser in verbs.items():
        assert verb_parser.description and name.split()[1] in verb_parser.format_help(), name
    for expected in ("clusters create", "tenants update", "namespaces set-backlog-quota",
                     "namespaces get-backlog-quotas", "namespaces remove-backlog-quota", "namespaces set-dispatcher-pause-on-ack-state-persistent",
                     "topics create-partitioned-topic", "topics partitioned-stats-internal", "topics reset-cursor",
                     "topics set-replicated-subscription-status", "schemas upload", "schemas test-compatibility",
                     "brokers update-dynamic-config"):
        assert expected in verbs
    result = subprocess.run([sys.executable, "-m", "minipulsar", "admin", "topics", "reset-cursor", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0 and "--messageId" in result.stdout and "--subscription" in result.stdout


def test_units_are_read_as_pulsar_admin_reads_them():
    assert [relative_seconds(t) for t in ("30", "10m", "1h", "2d", "1w", "-1")] == [30, 600, 3600, 172800, 604800, -1]
    assert [byte_size(s) for s in ("4096", "100K", "10M", "1g", "-1")] == [4096, 102400, 10 << 20, 1 << 30, -1]
    assert message_position("3:7") == {"ledgerId": 3, "entryId": 7}
    assert message_position("earliest") == {"ledgerId": -1, "entryId": -1}
    for bad, convert in (("10x", relative_seconds), ("M", byte_size), ("3", message_position)):
        with pytest.raises(argparse.ArgumentTypeError):
            convert(bad)
    assert pretty_hex_dump(b"hello").splitlines()[3] == \
        "|00000000| 68 65 6c 6c 6f                                  |hello           |"


def test_an_unreachable_broker_and_bad_flags_fail_in_one_line():
    url = f"http://127.0.0.1:{free_port()}"
    line = Cli(url).fails("tenants", "list", reason=url)
    assert "Connect call failed" in line or "refused" in line.lower()
    result = Cli(url).run("namespaces", "set-deduplication", "public/default")  # neither --enable nor --disable
    assert result.returncode == 2 and "Traceback" not in result.stderr


# ---- clusters, tenants, namespaces -------------------------------------------------------------

def test_clusters_round_trip(cli, broker, admin):
    assert "standalone(*)" in cli.lines("clusters", "list", "--current")
    assert cli.json("clusters", "get", "standalone")["brokerServiceUrl"] == broker.url
    assert cli.ok("clusters", "create", "c-cli", "--url", "http://h1:8080", "--broker-url", "pulsar://h1:6650") == ""
    assert admin.get("/admin/v2/clusters/c-cli").json() == {"serviceUrl": "http://h1:8080",
                                                             "brokerServiceUrl": "pulsar://h1:6650"}
    cli.ok("clusters", "update", "c-cli", "--broker-url", "pulsar://h2:6650")
    assert cli.json("clusters", "get", "c-cli") == {"brokerServiceUrl": "pulsar://h2:6650"}
    cli.ok("clusters", "delete", "c-cli")
    assert "(HTTP 404)" in cli.fails("clusters", "get", "c-cli", reason="Cluster c-cli does not exist")


def test_tenants_round_trip(cli, admin):
    cli.ok("tenants", "create", "t-cli", "-r", "r1,r2", "--allowed-clusters", "standalone")
    assert cli.json("tenants", "get", "t-cli") == {"adminRoles": ["r1", "r2"], "allowedClusters": ["standalone"]}
    assert {"public", "t-cli"} <= set(cli.lines("tenants", "list"))
    cli.ok("tenants", "update", "t-cli", "-r", "r3")  # the allowed clusters are kept
    assert admin.get("/admin/v2/tenants/t-cli").json() == {"adminRoles": ["r3"], "allowedClusters": ["standalone"]}
    cli.ok("tenants", "delete", "t-cli")
    assert admin.get("/admin/v2/tenants/t-cli").status_code == 404
    cli.fails("tenants", "delete", "t-cli", reason="Tenant t-cli does not exist")


def test_namespaces_and_their_policies(cli, admin):
    assert admin.put("/admin/v2/tenants/t-ns", json={}).status_code == 204
    cli.ok("namespaces", "create", "t-ns/ns1")
    assert cli.lines("namespaces", "list", "t-ns") == ["t-ns/ns1"]
    ns = "t-ns/ns1"
    for args in (("set-message-ttl", ns, "-ttl", "1h"), ("set-deduplication", ns, "--enable"),
                 ("set-retention", ns, "--time", "10m", "--size", "100M"),
                 ("set-backlog-quota", ns, "-l", "10M", "-p", "producer_exception"),
                 ("set-backlog-quota", ns, "-lt", "1h", "-p", "consumer_backlog_eviction", "-t", "message_age"),
                 ("set-subscription-types-enabled", ns, "-t", "Shared,Exclusive"),
                 ("set-schema-compatibility-strategy", ns, "-c", "backward"),
                 ("set-delayed-delivery", ns, "--enable", "-t", "2s"),
                 ("set-dispatcher-pause-on-ack-state-persistent", ns)):
        assert cli.ok("namespaces", *args) == ""
    policies = cli.json("namespaces", "policies", ns)
    assert policies["message_ttl_in_seconds"] == 3600
    assert policies["deduplicationEnabled"] is True
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 10, "retentionSizeInMB": 100}
    assert policies["subscription_types_enabled"] == ["Shared", "Exclusive"]
    assert policies["schema_compatibility_strategy"] == "BACKWARD"
    assert policies["delayed_delivery_policies"] == {"active": True, "tickTime": 2000}
    assert policies["dispatcherPauseOnAckStatePersistentEnabled"] is True
    assert cli.lines("namespaces", "get-message-ttl", ns) == ["3600"]
    assert cli.json("namespaces", "get-retention", ns) == {"retentionTimeInMinutes": 10, "retentionSizeInMB": 100}
    assert cli.json("namespaces", "get-backlog-quotas", ns) == {
        "destination_storage": {"limitSize": 10 << 20, "limitTime": -1, "policy": "producer_exception"},
        "message_age": {"limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"}}
    cli.ok("namespaces", "remove-message-ttl", ns)
    cli.ok("namespaces", "remove-backlog-quota", ns, "-t", "message_age")
    policies = admin.get("/admin/v2/namespaces/" + ns).json()
    assert "message_ttl_in_seconds" not in policies and list(policies["backlog_quota_map"]) == ["destination_storage"]
    cli.ok("namespaces", "delete", ns)
    cli.fails("namespaces", "set-retention", ns, "-t", "1h", "-s", "1G", reason=f"Namespace {ns} does not exist")


# ---- topics, messages, subscriptions -----------------------------------------------------------

def test_partitioned_topics_are_seen_by_the_official_client(cli, official, topic, admin):
    cli.ok("topics", "create-partitioned-topic", short(topic), "-p", "3")  # the short name
    assert len(official.get_topic_partitions(topic)) == 3
    assert cli.json("topics", "get-partitioned-topic-metadata", topic) == {"partitions": 3}
    cli.ok("topics", "update-partitioned-topic", topic, "--partitions", "5")
    wait_for(lambda: len(official.get_topic_partitions(topic)) == 5, "the official client to see 5 partitions")
    assert topic in cli.lines("topics", "list-partitioned-topics", "public/default")
    producer = official.create_producer(topic)  # connected until the forced delete
    producer.send(b"x")
    stats = cli.json("topics", "partitioned-stats", topic, "--per-partition")
    assert stats["metadata"] == {"partitions": 5} and stats["msgInCounter"] == 1 and len(stats["partitions"]) == 5
    cli.fails("topics", "delete-partitioned-topic", topic, reason="(HTTP 412)")  # the producer is connected
    cli.ok("topics", "delete-partitioned-topic", topic, "-f")
    assert admin.get("/admin/v2" + rest_path(topic) + "/partitions").json() == {"partitions": 0}
    cli.fails("topics", "create-partitioned-topic", topic, "-p", "0", reason="partitions")


def test_non_partitioned_topic_round_trip(cli, topic, admin):
    cli.ok("topics", "create", topic)
    assert topic in cli.lines("topics", "list", "public/default")
    assert cli.json("topics", "stats", topic)["publishers"] == []
    assert cli.json("topics", "stats-internal", topic)["numberOfEntries"] == 0
    cli.ok("topics", "unload", topic)
    last = admin.get("/admin/v2" + "/persistent/" + topic.split("://", 1)[1] + "/lastMessageId").json()
    assert cli.ok("topics", "terminate", topic).strip() == \
        f"Topic successfully terminated at {last['ledgerId']}:{last['entryId']}:-1"
    cli.ok("topics", "delete", topic)
    assert topic not in admin.get("/admin/v2/persistent/public/default").json()
    cli.fails("topics", "stats", topic, reason=f"Topic {topic} not found")


def test_messages_and_subscriptions(cli, broker, official, topic, admin):
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"hello-{i}".encode(), properties={"i": str(i)}) for i in range(3)]
    backlog = lambda: broker.subscription_stats(topic, "sub")["msgBacklog"]  # noqa: E731
    cli.ok("topics", "create-subscription", topic, "-s", "sub", "-m", "earliest")
    assert cli.lines("topics", "subscriptions", topic) == ["sub"] and backlog() == 3
    last = cli.json("topics", "last-message-id", topic)
    assert (last["ledgerId"], last["entryId"]) == (ids[2].ledger_id(), ids[2].entry_id())
    out = cli.ok("topics", "get-message-by-id", topic, "-l", str(ids[1].ledger_id()), "-e", str(ids[1].entry_id()))
    assert f"Message ID: {ids[1].ledger_id()}:{ids[1].entry_id()}" in out and '"i" : "1"' in out  # Jackson's layout, as pulsar-admin prints it
    assert "|hello-1         |" in out
    assert "|hello-0         |" in cli.ok("topics", "examine-message", topic, "-i", "earliest", "-m", "1")
    cli.ok("topics", "skip", topic, "-s", "sub", "-n", "1")
    assert backlog() == 2
    cli.ok("topics", "clear-backlog", topic, "-s", "sub")
    assert backlog() == 0
    cli.ok("topics", "reset-cursor", topic, "-s", "sub", "-t", "1h")  # an hour back: before every message
    assert backlog() == 3
    cli.ok("topics", "expire-messages", topic, "-s", "sub", "-t", "0")
    assert backlog() == 0
    cli.ok("topics", "reset-cursor", topic, "-s", "sub", "-m", f"{ids[2].ledger_id()}:{ids[2].entry_id()}")
    assert backlog() == 1
    cli.ok("topics", "set-replicated-subscription-status", topic, "-s", "sub", "--enable")
    status = admin.get("/admin/v2" + rest_path(topic) + "/subscription/sub/replicatedSubscriptionStatus").json()
    assert status == {topic: True}
    cli.ok("topics", "unsubscribe", topic, "-s", "sub")
    cli.fails("topics", "unsubscribe", topic, "-s", "sub", reason="Subscription sub not found")


# ---- schemas, brokers --------------------------------------------------------------------------

def test_schemas_round_trip(cli, topic, tmp_path):
    payload = tmp_path / "schema.json"
    definition = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    payload.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(definition), "properties": {"k": "v"}}))
    cli.ok("schemas", "upload", topic, "-f", str(payload))
    schema = cli.json("schemas", "get", topic)
    assert (schema["version"], schema["type"], schema["properties"]) == (0, "AVRO", {"k": "v"})
    assert json.loads(schema["data"]) == definition
    assert cli.json("schemas", "test-compatibility", topic, "-f", str(payload))["isCompatibility"] is True
    cli.ok("schemas", "delete", topic)
    cli.fails("schemas", "get", topic, reason="Schema not found")


def test_brokers_health_and_dynamic_config(cli, admin):
    assert cli.lines("brokers", "healthcheck") == ["ok"]
    assert cli.json("brokers", "get-runtime-config")["clusterName"] == "standalone"
    assert "dispatcherMaxReadBatchSize" in cli.lines("brokers", "list-dynamic-config")
    cli.ok("brokers", "update-dynamic-config", "--config", "dispatcherMaxReadBatchSize", "--value", "50")
    assert cli.json("brokers", "get-all-dynamic-config") == {"dispatcherMaxReadBatchSize": "50"}
    cli.ok("brokers", "delete-dynamic-config", "-c", "dispatcherMaxReadBatchSize")
    assert admin.get("/admin/v2/brokers/configuration/values").json() == {}
    cli.fails("brokers", "update-dynamic-config", "-c", "clusterName", "-v", "x", reason="is not dynamic")
