"""The command line as a user runs it (child processes): `minipulsar tokens` makes keys and tokens a
broker accepts, and `minipulsar admin` / `minipulsar client` authenticate with --auth-plugin /
--auth-params as Pulsar's tools do (a token, a token file, a client certificate over https)."""
from __future__ import annotations

import base64
import json
import subprocess
import sys

import pulsar

from tests import ROOT, env_without_broker_config
from tests.integration.security.conftest import official_client
from tests.pki import TLS_PROVIDER, TOKEN_PROVIDER, tls_settings, token_settings

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "minipulsar", *args], cwd=ROOT, env=env_without_broker_config(),
                            capture_output=True, text=True, timeout=60)
    if ok:
        assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    else:
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result


def test_tokens_secret_key_create_validate(tmp_path, broker_factory, topic):
    key = tmp_path / "secret.key"
    run("tokens", "create-secret-key", "--output", str(key))
    assert len(key.read_bytes()) == 32
    encoded = tmp_path / "secret.b64"
    run("tokens", "create-secret-key", "-a", "HS512", "-o", str(encoded), "--base64")
    assert len(base64.b64decode(encoded.read_bytes())) == 64
    token = run("tokens", "create", "--subject", "alice", "--secret-key", key.as_uri(),
                "--expiry-time", "1h").stdout.strip()
    assert run("tokens", "validate", "-sk", key.as_uri(), token).stdout.startswith("{sub=alice, exp=")
    assert json.loads(run("tokens", "show", token).stdout.split("---")[1])["sub"] == "alice"
    wrong = run("tokens", "validate", "-sk", encoded.read_text(), token, ok=False)
    assert "invalid token" in wrong.stderr
    broker = broker_factory(authenticationEnabled="true", authenticationProviders=TOKEN_PROVIDER,
                            tokenSecretKey=key.as_uri())
    with official_client(broker.url, authentication=pulsar.AuthenticationToken(token)) as client:
        client.create_producer(topic).close()


def test_tokens_key_pairs(tmp_path, broker_factory, topic):
    for alg in ("RS256", "ES256"):
        private, public = tmp_path / f"{alg}.private", tmp_path / f"{alg}.public"
        run("tokens", "create-key-pair", "--signature-algorithm", alg, "--output-private-key", str(private),
            "--output-public-key", str(public))
        token = run("tokens", "create", "-s", "bob", "--private-key", private.as_uri()).stdout.strip()
        assert json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["alg"] == alg
        assert run("tokens", "validate", "--public-key", public.as_uri(), token).stdout.strip() == "{sub=bob}"
    broker = broker_factory(authenticationEnabled="true", authenticationProviders=TOKEN_PROVIDER,
                            tokenPublicKey=(tmp_path / "ES256.public").as_uri(), tokenPublicAlg="ES256")
    with official_client(broker.url, authentication=pulsar.AuthenticationToken(token)) as client:
        client.create_producer(topic).close()


def test_admin_and_client_with_a_token(token_broker, make_token, tmp_path, topic):
    broker = token_broker(authorizationEnabled="true", superUserRoles="admin")
    admin_url = broker.broker.web_service_url
    token_file = tmp_path / "admin.token"
    token_file.write_text(make_token("admin") + "\n")
    auth = ("--auth-plugin", TOKEN_PLUGIN, "--auth-params", f"token:{make_token('admin')}")
    assert run("admin", "--admin-url", admin_url, *auth, "tenants", "list").stdout.split() == ["public", "pulsar"]
    refused = run("admin", "--admin-url", admin_url, "tenants", "list", ok=False)
    assert "Authentication required (HTTP 401)" in refused.stderr
    by_file = ("--auth-plugin", TOKEN_PLUGIN, "--auth-params", token_file.as_uri())
    run("admin", "--admin-url", admin_url, *by_file, "namespaces", "grant-permission", "public/default",
        "--role", "bob", "--actions", "produce,consume")
    listed = run("admin", "--admin-url", admin_url, *by_file, "namespaces", "permissions", "public/default").stdout
    assert json.loads(listed) == {"bob": ["consume", "produce"]}
    run("admin", "--admin-url", admin_url, *by_file, "topics", "grant-permission", topic, "--role", "carol",
        "--actions", "consume")
    assert json.loads(run("admin", "--admin-url", admin_url, *by_file, "topics", "permissions", topic).stdout) == {
        "bob": ["consume", "produce"], "carol": ["consume"]}
    bob = ("--auth-plugin", TOKEN_PLUGIN, "--auth-params", f"token:{make_token('bob')}")
    produced = run("client", "--url", broker.url, *bob, "produce", topic, "-m", "hi")
    assert "1 messages successfully produced" in produced.stdout
    run("admin", "--admin-url", admin_url, *by_file, "namespaces", "revoke-permission", "public/default",
        "--role", "bob")
    run("client", "--url", broker.url, *bob, "--operation-timeout", "5", "produce", topic, "-m", "hi", ok=False)


def test_admin_over_https_with_a_client_certificate(broker_factory, pki, jwt_keys):
    broker = broker_factory(**token_settings(jwt_keys, authenticationProviders=f"{TOKEN_PROVIDER},{TLS_PROVIDER}",
                                             authorizationEnabled="true", superUserRoles="admin"), **tls_settings(pki))
    tls = ("--admin-url", broker.broker.web_service_url_tls, "--tls-trust-cert-path", str(pki.ca))
    admin = ("--auth-plugin", TLS_PLUGIN, "--auth-params", f"tlsCertFile:{pki.admin.cert},tlsKeyFile:{pki.admin.key}")
    assert run("admin", *tls, *admin, "clusters", "list").stdout.split() == ["standalone"]
    alice = ("--auth-plugin", TLS_PLUGIN, "--auth-params", f"tlsCertFile:{pki.alice.cert},tlsKeyFile:{pki.alice.key}")
    assert "(HTTP 403)" in run("admin", *tls, *alice, "clusters", "list", ok=False).stderr
    unknown = run("admin", *tls, "--auth-plugin", "com.example.Auth", "clusters", "list", ok=False)
    assert unknown.returncode == 2 and "unknown authentication plugin" in unknown.stderr


def test_broker_refuses_to_start_with_security_that_cannot_work(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("authenticationEnabled=true\n"
                    "authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderAthenz\n")
    result = run("broker", "--config", str(conf), "--data-dir", str(tmp_path / "data"), "--broker-service-port", "0",
                 "--web-service-port", "0", ok=False)
    assert "config key authenticationProviders" in result.stderr and "AuthenticationProviderAthenz" in result.stderr
    # Basic authentication without its htpasswd data would refuse every client: refused at start-up
    conf.write_text("authenticationEnabled=true\n"
                    "authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderBasic\n")
    result = run("broker", "--config", str(conf), "--data-dir", str(tmp_path / "data"), "--broker-service-port", "0",
                 "--web-service-port", "0", ok=False)
    assert "config key basicAuthConf" in result.stderr and "pulsar.auth.basic.conf" in result.stderr
