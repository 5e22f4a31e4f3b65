"""Test key material made with the cryptography package: a CA, server certificates for
127.0.0.1/localhost, client certificates by CN, and JWT keys in the files Pulsar's tools write
(raw secret bytes, DER key pairs); and the broker settings that use them (token_settings,
tls_settings). The session's material comes from the fixtures pki, jwt_keys and make_token
(tests/conftest.py)."""
from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
PEM = serialization.Encoding.PEM
DER = serialization.Encoding.DER


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path: Path, key, encoding=PEM) -> Path:
    path.write_bytes(key.private_bytes(encoding, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path


@dataclass
class Certificate:
    """cert and key: PEM files."""

    cert: Path
    key: Path


class CertificateAuthority:
    """A CA that signs server and client certificates into folder."""

    def __init__(self, folder: Path, name: str = "minipulsar-test-ca"):
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = _name(name)
        self.certificate = (
            x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256()))
        self.cert_path = folder / f"{name}.pem"
        self.cert_path.write_bytes(self.certificate.public_bytes(PEM))

    def issue(self, file_name: str, cn: str, server: bool) -> Certificate:
        """A certificate for cn: a server one valid for 127.0.0.1 and localhost, or a client one."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(self.name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        cert_path = self.folder / f"{file_name}.pem"
        cert_path.write_bytes(certificate.public_bytes(PEM))
        return Certificate(cert_path, _write_key(self.folder / f"{file_name}.key", key))


@dataclass
class Pki:
    """ca: the trusted CA's PEM; server/server2: two server certificates (for reloads); alice,
    bob, admin: client certificates with those CNs; stranger: a client certificate of another CA."""

    ca: Path
    server: Certificate
    server2: Certificate
    alice: Certificate
    bob: Certificate
    admin: Certificate
    stranger: Certificate


def make_pki(folder: Path) -> Pki:
    ca = CertificateAuthority(folder)
    other = CertificateAuthority(folder, "other-ca")
    return Pki(ca.cert_path, ca.issue("server", "server", True), ca.issue("server2", "server2", True),
               ca.issue("alice", "alice", False), ca.issue("bob", "bob", False), ca.issue("admin", "admin", False),
               other.issue("stranger", "alice", False))


@dataclass
class JwtKeys:
    """secret: raw 256-bit secret file; rsa_private/rsa_public and ec_private/ec_public: DER files,
    as `pulsar tokens create-key-pair` writes them; the key objects for signing in tests."""

    secret: Path
    secret_bytes: bytes
    rsa_private: Path
    rsa_public: Path
    rsa_key: rsa.RSAPrivateKey
    ec_private: Path
    ec_public: Path
    ec_key: ec.EllipticCurvePrivateKey


def make_jwt_keys(folder: Path) -> JwtKeys:
    secret = secrets.token_bytes(32)
    (folder / "secret.key").write_bytes(secret)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    for name, key in (("rsa", rsa_key), ("ec", ec_key)):
        _write_key(folder / f"{name}-private.key", key, DER)
        (folder / f"{name}-public.key").write_bytes(
            key.public_key().public_bytes(DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    return JwtKeys(folder / "secret.key", secret, folder / "rsa-private.key", folder / "rsa-public.key", rsa_key,
                   folder / "ec-private.key", folder / "ec-public.key", ec_key)


def token_settings(jwt_keys: JwtKeys, **extra) -> dict:
    """Settings of a broker that authenticates tokens signed with the session's secret key."""
    return {"authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
            "tokenSecretKey": jwt_keys.secret.as_uri(), **extra}


def tls_settings(pki: Pki, **extra) -> dict:
    """Settings of a broker with TLS listeners (binary and web) on free ports."""
    return {"brokerServicePortTls": "0", "webServicePortTls": "0", "tlsCertificateFilePath": str(pki.server.cert),
            "tlsKeyFilePath": str(pki.server.key), "tlsTrustCertsFilePath": str(pki.ca), **extra}
