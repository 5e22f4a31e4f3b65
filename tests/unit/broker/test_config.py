"""Broker configuration: Pulsar key names, precedence, and errors that name the key. The broker verb
meeting them in a child process: tests/integration/cli/test_cli_broker_config.py."""
import pytest

from minipulsar.broker.config import ConfigError, build_config, env_overrides, parse_conf_file, unused_keys_report


def test_defaults_match_pulsar():
    config = build_config()
    assert config.broker_service_port == 6650
    assert config.web_service_port == 8080
    assert config.cluster_name == "standalone"
    assert config.max_message_size == 5 * 1024 * 1024
    assert config.managed_ledger_max_entries_per_ledger == 50000
    assert config.managed_ledger_max_unacked_ranges_to_persist == 10000
    assert config.journal_sync_data is True
    assert config.journal_pre_alloc_size_mb == 16  # BookKeeper's journalPreAllocSizeMB
    assert build_config({"journalPreAllocSizeMB": "4"}).ledger_config().journal_pre_alloc_size_mb == 4
    assert config.data_dir == "./data"


def test_layers_later_wins_and_keys_match_loosely(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# comment\nbrokerServicePort=7000\nclusterName=east\nmanagedLedgerCacheSizeMB=\nsomeUnknownKey=1\n")
    env = env_overrides({"MINIPULSAR_BROKER_SERVICE_PORT": "7001", "PATH": "/bin"})
    config = build_config(parse_conf_file(conf), env, {"clusterName": "west"})
    assert config.broker_service_port == 7001
    assert config.cluster_name == "west"
    assert config.managed_ledger_cache_size_mb == 64  # empty value keeps the default
    assert config.extra == {"someUnknownKey": "1"}


@pytest.mark.parametrize("key,value", [
    ("brokerServicePort", "not-a-port"),
    ("brokerServicePort", "70000"),
    ("journalSyncData", "maybe"),
    ("allowAutoTopicCreationType", "sometimes"),
    ("journalPreAllocSizeMB", "0"),
])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=key):
        build_config({key: value})


def test_bad_line_in_file_is_reported(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("no equals sign here\n")
    with pytest.raises(ConfigError, match="broker.conf:1"):
        parse_conf_file(conf)


def test_unused_keys_are_split_into_pulsar_keys_and_typos():
    pulsar, unknown = unused_keys_report({"zookeeperServers": "zk:2181", "brokerServicePrt": "6651",
                                          "completelyMadeUp": "1"})
    assert pulsar == ["zookeeperServers"]
    assert unknown == [("brokerServicePrt", "brokerServicePort"), ("completelyMadeUp", None)]
