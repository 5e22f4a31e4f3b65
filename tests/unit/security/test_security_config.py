"""Security settings that cannot work stop start-up with a ConfigError naming the key (no sockets:
BrokerSecurity is built from the config alone, as Broker.__init__ builds it)."""
from __future__ import annotations

import logging

import pytest
from minipulsar.broker.config import ConfigError, build_config
from minipulsar.broker.metadata_store import MetadataStore
from minipulsar.broker.namespaces import Namespaces
from minipulsar.broker.security.service import BrokerSecurity
from minipulsar.client.auth import TOKEN_PLUGIN

from tests.pki import TLS_PROVIDER, TOKEN_PROVIDER, tls_settings, token_settings


def security(tmp_path, **settings) -> BrokerSecurity:
    store = MetadataStore(tmp_path / "metadata.json")
    return BrokerSecurity(build_config(settings), Namespaces(store, "", "standalone", set), store)


def refused(tmp_path, key: str, **settings) -> str:
    with pytest.raises(ConfigError) as caught:
        security(tmp_path, **settings)
    assert f"config key {key}" in str(caught.value)
    return str(caught.value)


def test_defaults_leave_security_off(tmp_path):
    off = security(tmp_path)
    assert off.authentication is None and off.authorization is None and off.tls is None


def test_authentication_without_a_provider_is_refused(tmp_path):
    message = refused(tmp_path, "authenticationProviders", authenticationEnabled="true")
    assert "at least one provider" in message


def test_an_unknown_provider_is_refused_by_name(tmp_path, jwt_keys):
    message = refused(tmp_path, "authenticationProviders", **token_settings(
        jwt_keys, authenticationProviders=f"{TOKEN_PROVIDER},com.example.MyProvider"))
    assert "com.example.MyProvider" in message


def test_authorization_without_authentication_is_refused(tmp_path):
    refused(tmp_path, "authorizationEnabled", authorizationEnabled="true", superUserRoles="admin")


def test_token_provider_needs_a_key(tmp_path):
    refused(tmp_path, "tokenSecretKey", authenticationEnabled="true", authenticationProviders=TOKEN_PROVIDER)


def test_both_token_keys_are_ambiguous(tmp_path, jwt_keys):
    refused(tmp_path, "tokenPublicKey", **token_settings(jwt_keys, tokenPublicKey=jwt_keys.rsa_public.as_uri()))


def test_unreadable_and_short_secret_keys_are_refused(tmp_path, jwt_keys):
    assert "cannot read" in refused(tmp_path, "tokenSecretKey",
                                    **token_settings(jwt_keys, tokenSecretKey=(tmp_path / "none").as_uri()))
    short = tmp_path / "short.key"
    short.write_bytes(b"0123456789")
    message = refused(tmp_path, "tokenSecretKey", **token_settings(jwt_keys, tokenSecretKey=short.as_uri()))
    assert "at least 256" in message


def test_public_alg_must_match_the_public_key(tmp_path, jwt_keys):
    settings = token_settings(jwt_keys, tokenSecretKey="", tokenPublicKey=jwt_keys.ec_public.as_uri())
    assert "RS256" in refused(tmp_path, "tokenPublicAlg", **settings)  # Pulsar's default algorithm
    assert security(tmp_path, **settings, tokenPublicAlg="ES256").authentication is not None
    refused(tmp_path, "tokenPublicAlg", **settings, tokenPublicAlg="XY999")


def test_audience_claim_needs_an_audience(tmp_path, jwt_keys):
    refused(tmp_path, "tokenAudience", **token_settings(jwt_keys, tokenAudienceClaim="aud"))


def test_tls_provider_needs_a_tls_port_and_trusted_cas(tmp_path, jwt_keys, pki):
    providers = f"{TOKEN_PROVIDER},{TLS_PROVIDER}"
    refused(tmp_path, "authenticationProviders", **token_settings(jwt_keys, authenticationProviders=providers))
    refused(tmp_path, "tlsTrustCertsFilePath", **token_settings(jwt_keys, authenticationProviders=providers),
            **tls_settings(pki, tlsTrustCertsFilePath=""))


def test_tls_port_needs_certificate_and_key_that_load(tmp_path, pki):
    refused(tmp_path, "tlsCertificateFilePath", brokerServicePortTls="0")
    refused(tmp_path, "tlsKeyFilePath", **tls_settings(pki, tlsKeyFilePath=str(pki.alice.key)))
    refused(tmp_path, "tlsTrustCertsFilePath", **tls_settings(pki, tlsTrustCertsFilePath=str(tmp_path / "none.pem")))
    refused(tmp_path, "tlsTrustCertsFilePath", **tls_settings(pki, tlsTrustCertsFilePath="",
                                                               tlsRequireTrustedClientCertOnConnect="true"))


def test_tls_protocols_and_ciphers_are_checked(tmp_path, pki):
    refused(tmp_path, "tlsProtocols", **tls_settings(pki, tlsProtocols="TLSv1.3,SSLv3"))
    refused(tmp_path, "tlsCiphers", **tls_settings(pki, tlsCiphers="NO-SUCH-CIPHER"))
    context = security(tmp_path, **tls_settings(pki, tlsProtocols="TLSv1.3")).tls.context
    assert context.minimum_version == context.maximum_version


def test_tls_ports_are_ports(tmp_path):
    with pytest.raises(ConfigError, match="config key brokerServicePortTls"):
        build_config({"brokerServicePortTls": "66510"})
    with pytest.raises(ConfigError, match="config key webServicePortTls"):
        build_config({"webServicePortTls": "https"})


def test_broker_client_plugin_is_checked(tmp_path):
    refused(tmp_path, "brokerClientAuthenticationPlugin", brokerClientAuthenticationPlugin="com.example.Auth")
    refused(tmp_path, "brokerClientAuthenticationPlugin", brokerClientAuthenticationParameters="token:abc")
    plugin = security(tmp_path, brokerClientAuthenticationPlugin=TOKEN_PLUGIN,
                      brokerClientAuthenticationParameters="token:abc").broker_client_authentication()
    assert (plugin.auth_method_name(), plugin.auth_data()) == ("token", b"abc")


def test_keys_without_authentication_are_reported(tmp_path, jwt_keys, caplog):
    with caplog.at_level(logging.WARNING):
        off = security(tmp_path, **token_settings(jwt_keys, authenticationEnabled="false"))
    assert off.authentication is None
    assert "authenticationEnabled=false" in caplog.text and "tokenSecretKey" in caplog.text


def test_plain_ports_off_need_their_tls_ports(tmp_path, pki):
    refused(tmp_path, "brokerServicePort", brokerServicePort="")
    refused(tmp_path, "webServicePort", webServicePort="", **tls_settings(pki, webServicePortTls=""))
    assert security(tmp_path, brokerServicePort="", webServicePort="", **tls_settings(pki)).tls is not None
