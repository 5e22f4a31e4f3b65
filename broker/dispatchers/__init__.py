"""Dispatchers: how a subscription's entries reach its consumers, one module per subscription type."""
