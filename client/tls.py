"""TLS for the bundled client: the ssl context a pulsar+ssl:// connection uses.

Options as the official client names them: tls_trust_certs_file_path (the CAs the broker's
certificate must chain to; the system's when None), tls_validate_hostname (the certificate must
name the host dialled), tls_allow_insecure_connection (accept any certificate), and a client
certificate from tls_certificate_file_path / tls_private_key_file_path or from
AuthenticationTLS (mutual TLS, Pulsar's AuthenticationTls). Source: Pulsar's C++ ClientConnection
(TLS setup) and ClientConfiguration.
"""
from __future__ import annotations

import ssl

from minipulsar.client.auth import AuthenticationTLS
from minipulsar.client.exceptions import InvalidConfiguration

TLS_SCHEME = "pulsar+ssl"


def is_tls_url(url: str) -> bool:
    return url.startswith(TLS_SCHEME + "://")


def client_ssl_context(trust_certs_file_path: str | None, validate_hostname: bool, allow_insecure: bool,
                       certificate_file_path: str | None, private_key_file_path: str | None,
                       authentication=None) -> ssl.SSLContext:
    """The context for pulsar+ssl:// connections; raises InvalidConfiguration naming the file that
    cannot be read."""
    try:
        context = ssl.create_default_context(cafile=trust_certs_file_path)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfiguration(f"tls_trust_certs_file_path {trust_certs_file_path}: {exc}") from exc
    context.check_hostname = validate_hostname and not allow_insecure
    if allow_insecure:
        context.verify_mode = ssl.CERT_NONE
    if isinstance(authentication, AuthenticationTLS):
        certificate_file_path = authentication.certificate_path
        private_key_file_path = authentication.private_key_path
    if certificate_file_path:
        try:
            context.load_cert_chain(certificate_file_path, private_key_file_path)
        except (OSError, ssl.SSLError) as exc:
            raise InvalidConfiguration(
                f"client certificate {certificate_file_path} / key {private_key_file_path}: {exc}") from exc
    return context
