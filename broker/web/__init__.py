"""The web service: Pulsar's admin REST API (/admin/v2), HTTP lookup (/lookup/v2) and Prometheus
metrics, served by aiohttp on the broker's own event loop (webServicePort, default 8080).

One module per group of paths, each exposing `add_routes(table)`; the route table both registers
the handlers with aiohttp and generates the OpenAPI document (/admin/v2/openapi.json)."""
