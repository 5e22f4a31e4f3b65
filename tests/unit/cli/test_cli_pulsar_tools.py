"""Pulsar's bin/ tools as minipulsar argv (minipulsar.cli.pulsar_tools), and conf/client.conf read
as Pulsar's tools read it: no process, no socket."""
from __future__ import annotations

import pytest

from minipulsar.cli import parser
from minipulsar.cli.client_conf import read_client_conf
from minipulsar.cli.pulsar_tools import admin_argv, client_argv, perf_argv, pulsar_argv

CLIENT_CONF = """\
# comments and empty values are skipped
webServiceUrl=https://broker:8443/
brokerServiceUrl=pulsar+ssl://broker:6651/
authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationBasic
authParams={"userId":"alice","password":"wonderland"}
tlsAllowInsecureConnection=true
tlsTrustCertsFilePath=/pulsar/certs/ca.pem
useTls=
"""


@pytest.fixture
def home(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "client.conf").write_text(CLIENT_CONF)
    return tmp_path


def test_pulsar_standalone_broker_and_tokens(home):
    environ = {"PULSAR_HOME": str(home)}
    assert pulsar_argv(["standalone", "-nss", "-nfw"], environ) == [
        "standalone", "--config", str(home / "conf" / "standalone.conf"), "--data-dir", "data/standalone",
        "-nss", "-nfw"]
    moved = pulsar_argv(["standalone"], {**environ, "PULSAR_STANDALONE_CONF": "test-conf/standalone-ssl.conf"})
    assert moved[:3] == ["standalone", "--config", "test-conf/standalone-ssl.conf"]
    assert pulsar_argv(["broker"], environ) == ["broker"]  # no conf/broker.conf here
    (home / "conf" / "broker.conf").write_text("clusterName=x\n")
    assert pulsar_argv(["broker"], environ) == ["broker", "--config", str(home / "conf" / "broker.conf")]
    assert pulsar_argv(["tokens", "create-secret-key"], environ) == ["tokens", "create-secret-key"]
    with pytest.raises(ValueError, match="bookie"):
        pulsar_argv(["bookie"], environ)
    for argv in (pulsar_argv(["standalone", "-nss", "-a", "localhost"], environ),
                 pulsar_argv(["tokens", "show", "x.y.z"], environ)):
        parser().parse_args(argv)  # every translation is a command line minipulsar takes


def test_client_conf_settings_come_first_so_options_win(home):
    environ = {"PULSAR_HOME": str(home)}
    admin = admin_argv(["--admin-url", "http://other:8080", "tenants", "list"], environ)
    assert admin[:9] == ["admin", "--admin-url", "https://broker:8443/", "--auth-plugin",
                         "org.apache.pulsar.client.impl.auth.AuthenticationBasic", "--auth-params",
                         '{"userId":"alice","password":"wonderland"}', "--tls-trust-cert-path", "/pulsar/certs/ca.pem"]
    assert parser().parse_args(admin).admin_url == "http://other:8080"  # the command line wins
    client = parser().parse_args(client_argv(["produce", "t", "-m", "x"], environ))
    assert (client.url, client.tls_allow_insecure, client.auth_plugin.endswith("Basic")) == (
        "pulsar+ssl://broker:6651/", True, True)
    perf = parser().parse_args(perf_argv(["produce", "t", "-r", "10"], environ))
    assert (perf.service_url, perf.tls_trust_cert_path, perf.rate) == ("pulsar+ssl://broker:6651/",
                                                                        "/pulsar/certs/ca.pem", 10.0)
    assert perf_argv(["--help"], environ) == ["perf", "--help"]


def test_client_conf_location_and_missing_file(home, tmp_path):
    other = tmp_path / "elsewhere.conf"
    other.write_text("webServiceUrl=http://x:1/\n")
    assert admin_argv(["clusters", "list"], {"PULSAR_HOME": str(home), "PULSAR_CLIENT_CONF": str(other)}) == [
        "admin", "--admin-url", "http://x:1/", "clusters", "list"]
    assert admin_argv(["clusters", "list"], {"PULSAR_HOME": str(tmp_path / "none")}) == ["admin", "clusters", "list"]
    assert read_client_conf(home / "conf" / "client.conf")["tlsAllowInsecureConnection"] == "true"
    assert "useTls" not in read_client_conf(home / "conf" / "client.conf")
