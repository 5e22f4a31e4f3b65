"""The web console: a browser application served at / of the broker's web ports.

Everything it shows and does goes through the web service's own paths (the admin REST API under
/admin/v2, /topics for producing), with the user's token when authentication is on, so the console
can show and do exactly what the REST API lets that role show and do. This package only serves its
static files (static/: index.html, the style sheet and the ES modules, all shipped in the wheel, no
CDN), with a Content-Security-Policy that allows nothing but this origin. webConsoleEnabled=false
leaves it out.
"""
from minipulsar.broker.web.console.assets import is_asset_request, register

__all__ = ["is_asset_request", "register"]
