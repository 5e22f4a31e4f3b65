"""Pulsar's WebSocket API on the web ports: producers, consumers and readers over JSON frames.

For browsers (which pass their token as the `token` query parameter), languages without a native
client, and Python without the pulsar-client wheel. Paths, query parameters, JSON fields, error
codes and defaults are Pulsar's (docs/websocket.md, docs/compatibility.md):

    service.py    routes, the admission of an upgrade, the service's client of this broker
    admission.py  authentication, authorization, the HTTP status of a refused upgrade
    paths.py      the topic and subscription a path names
    params.py     the query parameters, read as Pulsar reads them
    formats.py    the JSON shapes, message ids, times, error codes
    session.py    one socket: the read loop, idle timeout, pings, closing
    producer.py   the producer session
    delivery.py   pushing messages under a bound (consumer and reader sessions)
    consumer.py   the consumer session and its commands
    reader.py     the reader session
"""
