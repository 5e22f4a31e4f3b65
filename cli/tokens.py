"""`minipulsar tokens ...`: Pulsar's `pulsar tokens` tool (TokensCliUtils), with its verbs and flags,
for the keys and JWTs the broker's token authentication takes.

    create-secret-key [-a HS256] [-o FILE] [-b]           a random HMAC key (raw bytes; -b: base64)
    create-key-pair [-a RS256] --output-private-key F --output-public-key F   DER keys (PKCS#8 / X.509)
    create -s SUBJECT (-sk KEY | -pk KEY) [-e 1h] [-hs k=v]   prints a signed token
    show [TOKEN | -i | -f FILE]                           prints the token's header and claims
    validate [TOKEN | -i | -f FILE] (-sk KEY | -pk KEY)   prints the claims of a valid token

KEY is a key URL as the broker reads tokenSecretKey/tokenPublicKey: file:///path, data:;base64,...
or base64 text. Without TOKEN, -i or -f, show and validate read the TOKEN environment variable.
`-a` is also spelled --signature-algorithm (Pulsar's name) and --algorithm. The signing algorithm
of `create` follows the key, as jjwt's does (a 256-bit secret signs HS256, an RSA-2048 key RS256,
a P-256 key ES256). A failure prints one line on stderr and exits with status 1.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import sys
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from minipulsar.cli.admin.args import relative_seconds

# Key material is read by minipulsar.broker.security.keys, the module the broker's token
# authentication reads tokenSecretKey/tokenPublicKey with, so a key this verb accepts is one the
# broker accepts (Apache Pulsar's `pulsar tokens`, TokensCliUtils, likewise lives in pulsar-broker
# and uses the broker's AuthTokenUtils). It is imported inside the functions that use it, never at
# the top: the rest of the cli room, and importing this module, stay free of minipulsar.broker
# (tests/unit/cli/test_cli_room.py). Building the parser loads keys alone (its algorithm names).

EXIT_FAILURE = 1
SECRET_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
RSA_BITS = {"256": 2048, "384": 3072, "512": 4096}  # by the hash size, as jjwt's keyPairFor
EC_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}


class TokensError(Exception):
    """What went wrong, as the one line the verb prints."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `tokens` and its verbs on the root parser's sub-commands."""
    from minipulsar.broker.security import keys

    tokens = subparsers.add_parser("tokens", help="create keys and JWT tokens (as pulsar tokens)",
                                   description="Create and check the keys and tokens of token authentication, "
                                               "as Pulsar's `pulsar tokens` tool.")
    verbs = tokens.add_subparsers(dest="tokens_verb", required=True, metavar="VERB")
    p = _verb(verbs, "create-secret-key", create_secret_key, "Create a new secret key")
    _algorithm(p, "HS256", keys.HMAC_ALGORITHMS)
    p.add_argument("-o", "--output", help="write the secret key to a file instead of stdout")
    p.add_argument("-b", "--base64", action="store_true", help="encode the key in base64")
    p = _verb(verbs, "create-key-pair", create_key_pair, "Create a new pair of keys public/private")
    _algorithm(p, "RS256", keys.RSA_ALGORITHMS + keys.EC_ALGORITHMS)
    p.add_argument("--output-private-key", required=True, help="file where to write the private key")
    p.add_argument("--output-public-key", required=True, help="file where to write the public key")
    p = _verb(verbs, "create", create_token, "Create a new token")
    _algorithm(p, None, keys.RSA_ALGORITHMS + keys.EC_ALGORITHMS + keys.HMAC_ALGORITHMS)
    p.add_argument("-s", "--subject", required=True, help="the 'subject' or 'principal' associated with this token")
    p.add_argument("-e", "--expiry-time", type=relative_seconds,
                   help="relative expiry time for the token (e.g. 1h, 3d, 10y; m=minutes). Default: no expiration")
    _signing_keys(p, "-pk", "--private-key", "the private key for signing the token")
    p.add_argument("-hs", "--headers", action="append", default=[], metavar="KEY=VALUE",
                   help="additional header of the token; repeatable")
    p = _verb(verbs, "show", show_token, "Show the content of token")
    _token_source(p)
    p = _verb(verbs, "validate", validate_token, "Validate a token against a key")
    _algorithm(p, None, keys.RSA_ALGORITHMS + keys.EC_ALGORITHMS + keys.HMAC_ALGORITHMS)
    _token_source(p)
    _signing_keys(p, "-pk", "--public-key", "the public key for validating the token")
    tokens.set_defaults(run=run)
    return tokens


def _verb(verbs, name: str, action, help: str) -> argparse.ArgumentParser:
    parser = verbs.add_parser(name, help=help, description=help)
    parser.set_defaults(action=action)
    return parser


def _algorithm(parser: argparse.ArgumentParser, default: str | None, choices: tuple[str, ...]) -> None:
    parser.add_argument("-a", "--signature-algorithm", "--algorithm", dest="algorithm", default=default,
                        choices=choices, help=f"the signature algorithm{f' (default {default})' if default else ''}")


def _signing_keys(parser: argparse.ArgumentParser, short: str, long: str, help: str) -> None:
    parser.add_argument("-sk", "--secret-key", help="the secret key: file:///path, data:;base64,... or base64")
    parser.add_argument(short, long, dest="key_pair_key", help=f"{help}: file:///path, data:;base64,... or base64")


def _token_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("token", nargs="?", metavar="TOKEN", help="the token string")
    parser.add_argument("-i", "--stdin", action="store_true", help="read the token from standard input")
    parser.add_argument("-f", "--token-file", help="read the token from a file")


def run(args: argparse.Namespace) -> int:
    """A tokens verb: 0 on success, 1 with one line on stderr when it fails."""
    from minipulsar.broker.security import keys

    try:
        args.action(args)
    except (TokensError, keys.KeyMaterialError, OSError) as exc:
        print(f"minipulsar tokens {args.tokens_verb}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return 0


# ---- keys ----------------------------------------------------------------------------------
def create_secret_key(args: argparse.Namespace) -> None:
    key = secrets.token_bytes(SECRET_BYTES[args.algorithm])
    data = base64.b64encode(key) if args.base64 else key
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def create_key_pair(args: argparse.Namespace) -> None:
    if args.algorithm in EC_CURVES:
        private = ec.generate_private_key(EC_CURVES[args.algorithm]())
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS[args.algorithm[2:]])
    Path(args.output_private_key).write_bytes(private.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    Path(args.output_public_key).write_bytes(private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


# ---- tokens --------------------------------------------------------------------------------
def _one_key(args: argparse.Namespace, loader):
    """The key of -sk or -pk (exactly one), loaded."""
    from minipulsar.broker.security import keys

    if (args.secret_key is None) == (args.key_pair_key is None):
        raise TokensError("pass exactly one of --secret-key and the key pair's key (-pk)")
    key = keys.secret_key(args.secret_key) if args.secret_key is not None else loader(args.key_pair_key)
    if args.algorithm is not None and keys.algorithm_family(args.algorithm) != keys.key_family(key):
        raise TokensError(f"--signature-algorithm {args.algorithm} does not match the {keys.key_family(key)} key")
    return key


def create_token(args: argparse.Namespace) -> None:
    from minipulsar.broker.security import keys

    key = _one_key(args, keys.private_key)
    claims: dict = {"sub": args.subject}
    if args.expiry_time is not None:
        claims["exp"] = int(time.time()) + args.expiry_time
    headers = {}
    for item in args.headers:
        name, sep, value = item.partition("=")
        if not sep:
            raise TokensError(f"--headers {item!r}: expected key=value")
        headers[name] = value
    print(jwt.encode(claims, key, algorithm=keys.signing_algorithm(key), headers=headers or None))


def _read_token(args: argparse.Namespace) -> str:
    if args.token:
        return args.token.strip()
    if args.stdin:
        return sys.stdin.readline().strip()
    if args.token_file:
        return Path(args.token_file).read_text().strip()
    if os.environ.get("TOKEN"):
        return os.environ["TOKEN"].strip()
    raise TokensError("Token needs to be either passed as an argument or through `--stdin`, `--token-file` "
                      "or by the `TOKEN` environment variable")


def show_token(args: argparse.Namespace) -> None:
    token = _read_token(args)
    try:
        header, claims = jwt.get_unverified_header(token), jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise TokensError(f"not a token: {exc}") from None
    print(json.dumps(header))
    print("---")
    print(json.dumps(claims))


def validate_token(args: argparse.Namespace) -> None:
    from minipulsar.broker.security import keys

    key = _one_key(args, keys.public_key)
    try:
        claims = jwt.decode(_read_token(args), key, algorithms=list(keys.verification_algorithms(key)),
                            options={"verify_aud": False})
    except jwt.PyJWTError as exc:
        raise TokensError(f"invalid token: {exc}") from None
    # Printed as Pulsar prints jjwt's Claims: {sub=alice, exp=1700000000}
    print("{" + ", ".join(f"{name}={value}" for name, value in claims.items()) + "}")
