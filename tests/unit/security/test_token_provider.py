"""AuthenticationProviderToken without sockets: keys in Pulsar's forms (file:, data:, base64; DER
and PEM), HS256/RS256/ES256, expiry, audience and the role claim."""
from __future__ import annotations

import base64

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from minipulsar.broker.config import build_config
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.keys import KeyMaterialError, read_key_url
from minipulsar.broker.security.token_provider import AuthenticationProviderToken

from tests.pki import token_settings


def provider(jwt_keys, **settings) -> AuthenticationProviderToken:
    return AuthenticationProviderToken.from_config(build_config(token_settings(jwt_keys, **settings)))


def test_key_urls_as_pulsar_reads_them(tmp_path):
    path = tmp_path / "k"
    path.write_bytes(b"\x00\x01key")
    encoded = base64.b64encode(b"\x00\x01key").decode()
    assert read_key_url(path.as_uri()) == b"\x00\x01key"
    assert read_key_url(f"data:;base64,{encoded}") == b"\x00\x01key"
    assert read_key_url(f"data:application/octet-stream;base64,{encoded}") == b"\x00\x01key"
    assert read_key_url(encoded) == b"\x00\x01key"
    assert read_key_url(str(path)) == b"\x00\x01key"  # a plain path, as Testcontainers' .NET module passes
    with pytest.raises(KeyMaterialError):
        read_key_url("not base64 !")


def test_hs256_token_names_its_subject(jwt_keys, make_token):
    state = provider(jwt_keys).authenticate_data(make_token("alice").encode())
    assert (state.role, state.method, state.expires_at) == ("alice", "token", None)


def test_secret_key_as_data_url(jwt_keys, make_token):
    data = "data:;base64," + base64.b64encode(jwt_keys.secret_bytes).decode()
    assert provider(jwt_keys, tokenSecretKey=data).authenticate_token(make_token("alice")).role == "alice"


@pytest.mark.parametrize("kind, alg", [("rsa", "RS256"), ("ec", "ES256")])
def test_public_keys_der_and_pem(jwt_keys, make_token, tmp_path, kind, alg):
    der = getattr(jwt_keys, f"{kind}_public")
    pem = tmp_path / f"{kind}.pem"
    pem.write_bytes(serialization.load_der_public_key(der.read_bytes()).public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    for url in (der.as_uri(), pem.as_uri()):
        checker = provider(jwt_keys, tokenSecretKey="", tokenPublicKey=url, tokenPublicAlg=alg)
        assert checker.authenticate_token(make_token("bob", key=kind)).role == "bob"
        with pytest.raises(AuthenticationFailedError):
            checker.authenticate_token(make_token("bob"))  # HS256 with the secret: not this key's


def test_expired_and_forged_tokens_are_refused(jwt_keys, make_token):
    checker = provider(jwt_keys)
    with pytest.raises(AuthenticationFailedError, match="expired"):
        checker.authenticate_token(make_token("alice", expires_in=-5))
    forged = jwt.encode({"sub": "alice"}, b"another secret of at least 32 bytes!!", algorithm="HS256")
    with pytest.raises(AuthenticationFailedError, match="Signature verification failed"):
        checker.authenticate_token(forged)
    unsigned = jwt.encode({"sub": "alice"}, None, algorithm="none")
    with pytest.raises(AuthenticationFailedError):
        checker.authenticate_token(unsigned)
    with pytest.raises(AuthenticationFailedError, match="Blank"):
        checker.authenticate_token("  ")


def test_expiry_is_kept_for_the_refresh_check(jwt_keys, make_token):
    state = provider(jwt_keys).authenticate_token(make_token("alice", expires_in=60))
    assert not state.is_expired()
    assert state.is_expired(now=state.expires_at + 1)


def test_role_claim_and_audience(jwt_keys, make_token):
    checker = provider(jwt_keys, tokenAuthClaim="role", tokenAudienceClaim="aud", tokenAudience="broker-a")
    assert checker.authenticate_token(make_token(None, role="ops", aud="broker-a")).role == "ops"
    assert checker.authenticate_token(make_token(None, role=["ops", "x"], aud=["b", "broker-a"])).role == "ops"
    with pytest.raises(AuthenticationFailedError, match="broker-a"):
        checker.authenticate_token(make_token(None, role="ops", aud="broker-b"))
    with pytest.raises(AuthenticationFailedError, match="audience"):
        checker.authenticate_token(make_token(None, role="ops"))
    with pytest.raises(AuthenticationFailedError, match="role"):
        checker.authenticate_token(make_token("alice", aud="broker-a"))  # no "role" claim


def test_failure_reasons_never_carry_the_token(jwt_keys, make_token):
    token = make_token("alice", expires_in=-5)
    with pytest.raises(AuthenticationFailedError) as caught:
        provider(jwt_keys).authenticate_token(token)
    assert token not in str(caught.value) and token.split(".")[1] not in str(caught.value)


def test_http_bearer_header(jwt_keys, make_token):
    checker = provider(jwt_keys)
    assert checker.authenticate_http({"Authorization": f"Bearer {make_token('alice')}"}, None).role == "alice"
    assert checker.authenticate_http({}, None) is None
    assert checker.authenticate_http({"Authorization": "Basic abc"}, None) is None
