"""Key material named the way Pulsar names it, and the JWT algorithms each kind of key signs with.

A key setting (tokenSecretKey, tokenPublicKey, `tokens create --secret-key`, ...) is one of:
    file:///path/to/key            the file's bytes
    data:;base64,AAAA...           the bytes of a data URL (RFC 2397)
    AAAA...                        anything else: the bytes, base64-encoded
as Pulsar's AuthTokenUtils.readKeyFromUrl reads them. Secret keys are raw bytes (what `pulsar tokens
create-secret-key` writes); public and private keys are DER (X.509 SubjectPublicKeyInfo, PKCS#8, what
`pulsar tokens create-key-pair` writes) or PEM. Parsing is the cryptography package's.
"""
from __future__ import annotations

import base64
import binascii
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urlparse

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGORITHMS = ("ES256", "ES384", "ES512")
# jjwt (Pulsar's JWT library) refuses HMAC keys shorter than the hash: 256 bits for HS256.
MIN_SECRET_KEY_BYTES = 32
_EC_ALGORITHM_BY_CURVE = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


class KeyMaterialError(ValueError):
    """A key that cannot be read or decoded; the message says why, never the key's bytes."""


def read_key_url(value: str) -> bytes:
    """The bytes a key setting names: a file: or data: URL, the path of an existing file, or
    base64 text, in that order (Pulsar's AuthTokenUtils.readKeyFromUrl). Raises KeyMaterialError."""
    value = value.strip()
    if value.startswith("file:"):
        path = Path(unquote(urlparse(value).path))
        try:
            return path.read_bytes()
        except OSError as exc:
            raise KeyMaterialError(f"cannot read {path}: {exc.strerror}") from None
    if value.startswith("data:"):
        header, sep, body = value[len("data:"):].partition(",")
        if not sep:
            raise KeyMaterialError("a data: URL needs a ',' before its content")
        if header.endswith(";base64"):
            return _base64(body)
        return unquote_to_bytes(body)
    if value and Path(value).is_file():
        return Path(value).read_bytes()
    return _base64(value)


def _base64(text: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise KeyMaterialError("not valid base64 and no such file (expected file:///path, a path, data:;base64,... or base64 text)") from None


def secret_key(value: str) -> bytes:
    """An HMAC secret from a key setting; raises KeyMaterialError when shorter than 256 bits."""
    key = read_key_url(value)
    if len(key) < MIN_SECRET_KEY_BYTES:
        raise KeyMaterialError(f"the secret key is {len(key) * 8} bits; HS256 needs at least "
                               f"{MIN_SECRET_KEY_BYTES * 8}")
    return key


def public_key(value: str) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey:
    """An RSA or EC public key (DER or PEM) from a key setting; raises KeyMaterialError."""
    data = read_key_url(value)
    try:
        key = (serialization.load_pem_public_key(data) if data.lstrip().startswith(b"-----")
               else serialization.load_der_public_key(data))
    except (ValueError, TypeError) as exc:
        raise KeyMaterialError(f"not a DER or PEM public key ({exc})") from None
    if not isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
        raise KeyMaterialError(f"unsupported public key type {type(key).__name__} (RSA or EC expected)")
    return key


def private_key(value: str) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    """An RSA or EC private key (PKCS#8 DER, or PEM) from a key setting; raises KeyMaterialError."""
    data = read_key_url(value)
    try:
        key = (serialization.load_pem_private_key(data, password=None) if data.lstrip().startswith(b"-----")
               else serialization.load_der_private_key(data, password=None))
    except (ValueError, TypeError) as exc:
        raise KeyMaterialError(f"not an unencrypted DER or PEM private key ({exc})") from None
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise KeyMaterialError(f"unsupported private key type {type(key).__name__} (RSA or EC expected)")
    return key


def verification_algorithms(key) -> tuple[str, ...]:
    """The JWT algorithms a key may verify: HS* for a secret, RS*/PS* for RSA, ES* for EC."""
    if isinstance(key, bytes):
        return HMAC_ALGORITHMS
    if isinstance(key, (rsa.RSAPublicKey, rsa.RSAPrivateKey)):
        return RSA_ALGORITHMS
    return EC_ALGORITHMS


def signing_algorithm(key) -> str:
    """The algorithm jjwt's signWith(key) picks, which `pulsar tokens create` uses: by the secret's
    length (HS512 from 64 bytes, HS384 from 48), the RSA modulus (RS512 from 4096 bits, RS384 from
    3072) or the EC curve."""
    if isinstance(key, bytes):
        return "HS512" if len(key) >= 64 else "HS384" if len(key) >= 48 else "HS256"
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS512" if key.key_size >= 4096 else "RS384" if key.key_size >= 3072 else "RS256"
    return _EC_ALGORITHM_BY_CURVE.get(key.curve.name, "ES256")


def algorithm_family(algorithm: str) -> str:
    """'HMAC', 'RSA' or 'EC' for a JWT algorithm name; raises KeyMaterialError for an unknown one."""
    if algorithm in HMAC_ALGORITHMS:
        return "HMAC"
    if algorithm in RSA_ALGORITHMS:
        return "RSA"
    if algorithm in EC_ALGORITHMS:
        return "EC"
    raise KeyMaterialError(f"unknown signature algorithm {algorithm!r} "
                    f"(one of {', '.join(HMAC_ALGORITHMS + RSA_ALGORITHMS + EC_ALGORITHMS)})")


def key_family(key) -> str:
    """'HMAC', 'RSA' or 'EC' for a key."""
    return algorithm_family(verification_algorithms(key)[0])
