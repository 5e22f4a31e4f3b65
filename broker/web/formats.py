"""How the admin API prints positions and times, as Pulsar's does."""
from __future__ import annotations

import time

from minipulsar.storage import Position


def position_text(position: Position) -> str:
    """'ledger:entry', as Pulsar's PositionImpl.toString."""
    return f"{position.ledger_id}:{position.entry_id}"


def date_text(millis: int) -> str:
    """ISO-8601 with milliseconds, UTC: Pulsar's DateFormatter.format."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis / 1000)) + f".{millis % 1000:03d}Z"
