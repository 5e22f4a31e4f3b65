"""minipulsar's tests (tests/README.md says where each kind of test lives). ROOT is the checkout."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def env_without_broker_config() -> dict:
    """This process's environment without MINIPULSAR_<key> / PULSAR_<key> variables, which a broker
    started in a child process would read as configuration (and warn about when unknown)."""
    return {key: value for key, value in os.environ.items() if not key.startswith(("MINIPULSAR_", "PULSAR_"))}
