"""AuthenticationProviderBasic without sockets: the htpasswd data in every form Pulsar reads it
(path, file: and data: URLs, base64, the -D system property), both hash formats, the refusals,
and the bundled client's AuthenticationBasic."""
from __future__ import annotations

import base64

import pytest
from passlib.hash import apr_md5_crypt, des_crypt

from minipulsar.broker.config import ConfigError, build_config
from minipulsar.broker.security.basic_provider import AuthenticationProviderBasic, read_users
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.system_properties import jvm_options, system_property
from minipulsar.client.auth import AuthenticationBasic, create_authentication

HTPASSWD = f"alice:{apr_md5_crypt.hash('wonderland')}\nbob:{des_crypt.hash('builder')}\n"


def provider(value: str, environ=None) -> AuthenticationProviderBasic:
    return AuthenticationProviderBasic.from_config(build_config({"basicAuthConf": value}), environ or {})


@pytest.fixture
def htpasswd(tmp_path):
    path = tmp_path / ".htpasswd"
    path.write_text(HTPASSWD)
    return path


def every_form(path) -> list[str]:
    data = path.read_bytes()
    return [str(path), path.as_uri(), "data:;base64," + base64.b64encode(data).decode(), base64.b64encode(data).decode()]


def test_every_form_of_the_data_authenticates_both_formats(htpasswd):
    for value in every_form(htpasswd):
        basic = provider(value)
        assert basic.authenticate_data(b"alice:wonderland").role == "alice"
        assert basic.authenticate_data(b"bob:builder").method == "basic"


def test_system_property_is_the_fallback_and_basic_auth_conf_wins(htpasswd, tmp_path):
    extra = {"PULSAR_EXTRA_OPTS": f"-XX:+UseG1GC -Dpulsar.auth.basic.conf={htpasswd} -Dother=1"}
    basic = AuthenticationProviderBasic.from_config(build_config({}), extra)
    assert basic.authenticate_data(b"bob:builder").role == "bob"
    other = tmp_path / "other"
    other.write_text(f"carol:{apr_md5_crypt.hash('x')}\n")
    assert provider(str(other), extra).authenticate_data(b"carol:x").role == "carol"
    with pytest.raises(AuthenticationFailedError):
        provider(str(other), extra).authenticate_data(b"bob:builder")


@pytest.mark.parametrize("credentials", [b"alice:nope", b"mallory:wonderland", b"alice", b"alice:won:derland", b""])
def test_wrong_unknown_or_malformed_credentials_are_refused(htpasswd, credentials):
    with pytest.raises(AuthenticationFailedError) as refused:
        provider(str(htpasswd)).authenticate_data(credentials)
    assert "wonderland" not in str(refused.value)  # a password is never in the reason


def test_http_authorization_header(htpasswd):
    basic = provider(str(htpasswd))
    header = AuthenticationBasic("alice", "wonderland").http_headers()
    assert header["Authorization"].startswith("Basic ")
    assert basic.authenticate_http(header, None).role == "alice"
    assert basic.authenticate_http({"Authorization": "Bearer x.y.z"}, None) is None  # another provider's
    assert basic.authenticate_http({}, None) is None
    with pytest.raises(AuthenticationFailedError):
        basic.authenticate_http({"Authorization": "Basic !!notbase64"}, None)


@pytest.mark.parametrize("text, fault", [
    ("alice:$2y$05$abcdefghijklmnopqrstuuQw4jYEBuDTEnYFdP3k5e5dV0tPYNN8K\n", "format"),  # bcrypt
    ("alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "format"),
    ("no-colon-here\n", "not user:hash"),
])
def test_entries_pulsar_cannot_check_stop_start_up(text, fault):
    with pytest.raises(ConfigError) as refused:
        read_users(text)
    assert "config key basicAuthConf" in str(refused.value) and fault in str(refused.value)


def test_missing_or_unreadable_data_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match="config key basicAuthConf: .*no basic authentication config"):
        AuthenticationProviderBasic.from_config(build_config({}), {})
    with pytest.raises(ConfigError, match="config key basicAuthConf"):
        provider("not a file, and not base64!")
    with pytest.raises(ConfigError, match="config key -Dpulsar.auth.basic.conf"):
        AuthenticationProviderBasic.from_config(build_config({}), {"PULSAR_EXTRA_OPTS": "-Dpulsar.auth.basic.conf=%%"})


def test_jvm_option_variables_are_read_as_the_jvm_would():
    environ = {"PULSAR_MEM": "-Xms1g -Xmx1g", "PULSAR_GC": "-XX:+UseZGC",
               "PULSAR_EXTRA_OPTS": "-Dpulsar.auth.basic.conf='/a b/.htpasswd' -Dpulsar.auth.basic.conf=/last"}
    assert jvm_options(environ)[:3] == ["-Xms1g", "-Xmx1g", "-XX:+UseZGC"]
    assert system_property("pulsar.auth.basic.conf", environ) == "/last"  # the last one wins
    assert system_property("pulsar.auth.basic.conf", {}) is None


def test_client_plugin_from_pulsar_parameter_strings():
    for params in ('{"userId": "alice", "password": "wonderland"}', "userId:alice,password:wonderland"):
        plugin = create_authentication("org.apache.pulsar.client.impl.auth.AuthenticationBasic", params)
        assert (plugin.auth_method_name(), plugin.auth_data()) == ("basic", b"alice:wonderland")
    other = create_authentication("basic", '{"userId": "a", "password": "b", "method": "custom"}')
    assert other.auth_method_name() == "custom"
    with pytest.raises(ValueError):
        create_authentication("basic", '{"userId": "a"}')
