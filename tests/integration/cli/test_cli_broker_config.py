"""The broker verb's configuration as a user meets it (child processes): a bad value or log level
stops it with a usage error naming the key, a typo in broker.conf is a WARNING naming the closest
key, and --version prints the version. Parsing and precedence without a process:
tests/unit/broker/test_config.py."""
import subprocess
import sys

import minipulsar
from tests import ROOT


def test_cli_refuses_to_start_on_a_bad_value(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "minipulsar", "broker", "--data-dir", str(tmp_path), "--broker-service-port", "abc"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "brokerServicePort" in result.stderr


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
