"""The webSocket* broker settings (Pulsar's ServiceConfiguration / WebSocketProxyConfiguration):
accepted with Pulsar's names, and a bad value stops start-up with a ConfigError naming the key."""
from __future__ import annotations

import pytest

from minipulsar.broker.config import ConfigError, build_config


def test_client_sizing_keys_are_read():
    config = build_config({"webSocketNumIoThreads": "2", "webSocketConnectionsPerBroker": "3"})
    assert (config.web_socket_num_io_threads, config.web_socket_connections_per_broker) == (2, 3)
    assert config.extra == {}  # known keys, not kept aside as unknown ones


@pytest.mark.parametrize("key, value", [
    ("webSocketNumIoThreads", "0"),
    ("webSocketNumIoThreads", "many"),
    ("webSocketConnectionsPerBroker", "0"),
    ("webSocketConnectionsPerBroker", "-1"),
    ("webSocketSessionIdleTimeoutMillis", "-5"),
    ("webSocketMaxTextFrameSize", "0"),
    ("webSocketServiceEnabled", "perhaps"),
])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=f"config key {key}: "):
        build_config({key: value})
