"""The servers' TLS: one SSL context from Pulsar's tls* keys, reloaded when its files change.

tlsCertificateFilePath and tlsKeyFilePath (PEM) are the server's certificate chain and key;
tlsTrustCertsFilePath the CAs client certificates are verified against. With
tlsRequireTrustedClientCertOnConnect a client must present a certificate those CAs signed; without
it a client may present one (needed for AuthenticationProviderTls) or none. tlsProtocols bounds
the protocol versions (Pulsar's names: TLSv1.2, TLSv1.3); tlsCiphers are OpenSSL cipher names
(TLS 1.3 suites are always on, as OpenSSL has them).

Reload (tlsCertRefreshCheckDurationSec, as Pulsar): every so many seconds the files' stat
signatures are compared with the last load; when one changed a fresh context is built, and every
handshake from then on uses it (the listening socket keeps its first context, whose SNI callback,
which OpenSSL calls for every ClientHello, hands the handshake the current one). Connections
already open keep their session. A file that does not load is logged and the previous context
stays in service.
"""
from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass

from minipulsar.broker.config import BrokerConfig, ConfigError

log = logging.getLogger(__name__)

PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True)
class TlsSettings:
    """The tls* keys that shape a server context."""

    certificate_file: str
    key_file: str
    trust_certs_file: str = ""
    require_client_cert: bool = False
    protocols: tuple[str, ...] = ()
    ciphers: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "TlsSettings":
        """Raises ConfigError naming the key of a missing file, unknown protocol or setting that
        cannot work (a required client certificate with no CA to check it against)."""
        for key, value in (("tlsCertificateFilePath", config.tls_certificate_file_path),
                           ("tlsKeyFilePath", config.tls_key_file_path)):
            if not value:
                raise ConfigError(f"config key {key}: a TLS port (brokerServicePortTls / webServicePortTls) "
                                  "needs the server's certificate and key")
        if config.tls_require_trusted_client_cert_on_connect and not config.tls_trust_certs_file_path:
            raise ConfigError("config key tlsTrustCertsFilePath: tlsRequireTrustedClientCertOnConnect=true needs "
                              "the CAs client certificates are checked against")
        protocols = tuple(p.strip() for p in config.tls_protocols.split(",") if p.strip())
        unknown = [p for p in protocols if p not in PROTOCOLS]
        if unknown:
            raise ConfigError(f"config key tlsProtocols: unknown protocol {', '.join(unknown)} "
                              f"(one of {', '.join(PROTOCOLS)})")
        ciphers = tuple(c.strip() for c in config.tls_ciphers.split(",") if c.strip())
        return cls(config.tls_certificate_file_path, config.tls_key_file_path, config.tls_trust_certs_file_path,
                   config.tls_require_trusted_client_cert_on_connect, protocols, ciphers)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(path for path in (self.certificate_file, self.key_file, self.trust_certs_file) if path)


def build_context(settings: TlsSettings) -> ssl.SSLContext:
    """A server SSLContext from settings; raises ConfigError naming the key whose file or value
    does not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for key, path in (("tlsCertificateFilePath", settings.certificate_file), ("tlsKeyFilePath", settings.key_file),
                      ("tlsTrustCertsFilePath", settings.trust_certs_file)):
        if path and not os.access(path, os.R_OK):
            raise ConfigError(f"config key {key}: cannot read {path}")
    try:
        context.load_cert_chain(settings.certificate_file, settings.key_file)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"config key tlsKeyFilePath: the key and certificate (tlsCertificateFilePath) do not "
                          f"load as a PEM pair: {exc}") from None
    if settings.trust_certs_file:
        try:
            context.load_verify_locations(cafile=settings.trust_certs_file)
        except ssl.SSLError as exc:
            raise ConfigError(f"config key tlsTrustCertsFilePath: not PEM certificates: {exc}") from None
        context.verify_mode = ssl.CERT_REQUIRED if settings.require_client_cert else ssl.CERT_OPTIONAL
    if settings.protocols:
        versions = sorted(PROTOCOLS[p] for p in settings.protocols)
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
    if settings.ciphers:
        try:
            context.set_ciphers(":".join(settings.ciphers))
        except ssl.SSLError:
            raise ConfigError("config key tlsCiphers: OpenSSL knows none of these ciphers (use OpenSSL names, "
                              "e.g. ECDHE-RSA-AES256-GCM-SHA384)") from None
    return context


def peer_certificate(transport) -> bytes | None:
    """The DER client certificate a TLS handshake verified, or None (plain socket, or none sent)."""
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if ssl_object is None:
        return None
    return ssl_object.getpeercert(binary_form=True)


def _signature(paths: tuple[str, ...]) -> tuple:
    """What changes when a file is rewritten or replaced: inode, size and modification time."""
    signature = []
    for path in paths:
        try:
            stat = os.stat(path)
            signature.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        except OSError:
            signature.append(None)
    return tuple(signature)


class ReloadingContext:
    """settings: the TLS settings; `context` is what a server listens with, `reloads` counts the
    reloads that took effect."""

    def __init__(self, settings: TlsSettings):
        self.settings = settings
        self._signature = _signature(settings.files)
        self.current = self._build()
        self.context = self.current  # the listening sockets' context, fixed for their lifetime
        self.reloads = 0

    def _build(self) -> ssl.SSLContext:
        context = build_context(self.settings)
        context.sni_callback = self._select
        return context

    def _select(self, ssl_object, server_name, context) -> None:
        """Every ClientHello: serve the handshake with the latest context."""
        if self.current is not context:
            ssl_object.context = self.current

    def check(self) -> bool:
        """Reload when a file changed since the last load; True when a new context took effect."""
        signature = _signature(self.settings.files)
        if signature == self._signature:
            return False
        self._signature = signature
        try:
            self.current = self._build()
        except ConfigError as exc:
            log.error("TLS files changed but do not load; keeping the previous certificate: %s", exc)
            return False
        self.reloads += 1
        log.info("reloaded TLS certificate %s", self.settings.certificate_file)
        return True

    async def run(self, interval_seconds: float) -> None:
        """check() every interval_seconds until cancelled."""
        while True:
            await asyncio.sleep(interval_seconds)
            self.check()
