"""The minipulsar broker: asyncio server, topics, subscriptions, dispatchers, config and CLI."""
