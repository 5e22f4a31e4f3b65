"""Serving the console's files: GET / answers index.html, GET /console/{file} the rest of static/.

The files are public (no token is needed to load them: they hold no data), which
broker/security/web.py asks is_asset_request about; every request they make for data goes through
the REST API and its authentication. Responses carry Cache-Control: no-cache (a browser revalidates,
so an upgraded broker serves its new console at once) and the index a Content-Security-Policy that
allows scripts, styles, images and connections from this origin only.
"""
from __future__ import annotations

from pathlib import Path

from aiohttp import web

from minipulsar.broker.security.errors import AuthenticationFailedError
from minipulsar.broker.security.tls_context import peer_certificate

STATIC = Path(__file__).parent / "static"
PREFIX = "/console/"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
NO_CACHE = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


# The broker's BrokerSecurity (typed loosely: the console stays out of the web service's import
# cycle with the Broker); index.html asks its authentication whether a token is needed.
SECURITY: web.AppKey[object] = web.AppKey("console_security", object)


def register(app: web.Application, security) -> None:
    """Add the console's routes to app (not to the OpenAPI document: they are not the admin API);
    security: the broker's BrokerSecurity."""
    app[SECURITY] = security
    app.router.add_get("/", index)
    app.router.add_get(PREFIX + "{name:[A-Za-z0-9_-]+\\.(?:js|css|svg)}", asset)


def is_asset_request(request: web.Request) -> bool:
    """A GET (or HEAD) of the console's own files: public, its data is not."""
    return request.method in ("GET", "HEAD") and (request.path == "/" or request.path.startswith(PREFIX))


async def index(request: web.Request) -> web.Response:
    """index.html, its data-auth telling the page whether to ask for a token first ("token") or
    not ("none": authentication is off, or this request already authenticates, as a client
    certificate on the TLS port does), so the page makes no request bound to fail."""
    html = (STATIC / "index.html").read_text().replace('data-auth="none"', f'data-auth="{_auth_mode(request)}"', 1)
    return web.Response(text=html, content_type="text/html", charset="utf-8",
                        headers={"Content-Security-Policy": CSP, **NO_CACHE})


def _auth_mode(request: web.Request) -> str:
    authentication = request.app[SECURITY].authentication
    if authentication is None:
        return "none"
    try:
        authentication.authenticate_http(request.headers, peer_certificate(request.transport))
    except AuthenticationFailedError:
        return "token"
    return "none"


async def asset(request: web.Request) -> web.FileResponse:
    path = STATIC / request.match_info["name"]
    if not path.is_file():
        raise web.HTTPNotFound(reason=f"no console file {request.match_info['name']}")
    return _file(path, {})


def _file(path: Path, headers: dict[str, str]) -> web.FileResponse:
    return web.FileResponse(path, headers={**NO_CACHE, "Content-Type": TYPES[path.suffix], **headers})
