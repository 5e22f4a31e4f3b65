"""Broker configuration: Pulsar key names, precedence, and errors that name the key."""
import subprocess
import sys

import pytest

import minipulsar
from minipulsar.broker.config import ConfigError, build_config, env_overrides, parse_conf_file, unused_keys_report
from tests import ROOT



def test_defaults_match_pulsar():
    config = build_config()
    assert config.broker_service_port == 6650
    assert config.web_service_port == 8080
    assert config.cluster_name == "standalone"
    assert config.max_message_size == 5 * 1024 * 1024
    assert config.managed_ledger_max_entries_per_ledger == 50000
    assert config.managed_ledger_max_unacked_ranges_to_persist == 10000
    assert config.journal_sync_data is True
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
])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=key):
        build_config({key: value})


def test_bad_line_in_file_is_reported(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("no equals sign here\n")
    with pytest.raises(ConfigError, match="broker.conf:1"):
        parse_conf_file(conf)


def test_cli_refuses_to_start_on_a_bad_value(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "minipulsar", "broker", "--data-dir", str(tmp_path), "--broker-service-port", "abc"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "brokerServicePort" in result.stderr


def test_unused_keys_are_split_into_pulsar_keys_and_typos():
    pulsar, unknown = unused_keys_report({"zookeeperServers": "zk:2181", "brokerServicePrt": "6651",
                                          "completelyMadeUp": "1"})
    assert pulsar == ["zookeeperServers"]
    assert unknown == [("brokerServicePrt", "brokerServicePort"), ("completelyMadeUp", None)]


def test_typo_in_broker_conf_is_a_warning_naming_the_closest_key(broker_process, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerServicePrt=6651\nzookeeperServers=zk:2181\n")
    proc = broker_process(args=("--config", str(conf)))
    log = proc.log_path.read_text()
    assert "WARNING" in log and "brokerServicePrt" in log and "did you mean brokerServicePort?" in log
    assert "ignoring Pulsar config keys minipulsar does not use: zookeeperServers" in log


def test_bad_log_level_is_a_usage_error_and_version_is_printed(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "minipulsar", "broker", "--log-level", "LOUD"],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--log-level" in bad.stderr and "Traceback" not in bad.stderr
    for args in (["--version"], ["broker", "--version"]):
        shown = subprocess.run([sys.executable, "-m", "minipulsar", *args], cwd=ROOT, capture_output=True,
                               text=True, timeout=30)
        assert shown.returncode == 0 and shown.stdout.strip() == f"minipulsar {minipulsar.__version__}"
