"""Mutual TLS as an authentication method: the role is the Common Name of the client certificate
the TLS handshake verified, as Pulsar's
org.apache.pulsar.broker.authentication.AuthenticationProviderTls.

The certificate has already been checked against tlsTrustCertsFilePath by the handshake (an
untrusted one never gets that far), so this provider only reads its subject. A client using it
sends CONNECT with auth method "tls" (the official client's AuthenticationTLS); on the web service
the certificate of the TLS port's handshake is used when no other credentials are sent.
"""
from __future__ import annotations

from typing import Mapping

from cryptography import x509
from cryptography.x509.oid import NameOID
from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.state import AuthState

CLASS_NAME = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"


class AuthenticationProviderTls:
    """The client certificate's CN as the role."""

    method = "tls"

    def authenticate_data(self, data: bytes, peer_certificate: bytes | None) -> AuthState:
        """The role of a connection whose handshake verified peer_certificate (DER); raises
        AuthenticationFailedError when there is none (a plain connection, or no client certificate)."""
        if peer_certificate is None:
            raise AuthenticationFailedError("Failed to get TLS certificates from client")
        return AuthState(common_name(peer_certificate), self.method)

    def authenticate_http(self, headers: Mapping[str, str], peer_certificate: bytes | None) -> AuthState | None:
        """The role of a request on the TLS web port with a verified client certificate, else None."""
        if peer_certificate is None:
            return None
        return AuthState(common_name(peer_certificate), self.method)


def common_name(der: bytes) -> str:
    """The subject CN of a DER certificate; raises AuthenticationFailedError when it has none."""
    try:
        names = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    except ValueError as exc:
        raise AuthenticationFailedError(f"unreadable client certificate: {exc}") from None
    if not names or not str(names[0].value):
        raise AuthenticationFailedError("Client certificate has no Common Name (CN) to use as the role")
    return str(names[0].value)
