"""The minipulsar broker: asyncio server, topics, subscriptions, dispatchers and config (the command
line that runs it is minipulsar.cli)."""
