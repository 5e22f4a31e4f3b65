"""Command handlers, one module per group; ROUTES maps BaseCommand.Type to a handler.

A handler is `handler(connection, frame)`; it may return an awaitable, which the connection runs
as a task. Raising BrokerError answers the request with ERROR and keeps the connection open.
"""
from minipulsar.broker.handlers import consumers, lookup, producers, session

ROUTES = {**session.HANDLERS, **lookup.HANDLERS, **producers.HANDLERS, **consumers.HANDLERS}
