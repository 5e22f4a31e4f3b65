"""Child entry point: ``python -m tools.crashstates.runner {setup|run} <workload> <root> <ack file>``.

Runs one phase of a workload in this (fresh) process; the recorder runs the ``run`` phase under
strace. Logging goes to stderr at WARNING.
"""
from __future__ import annotations

import logging
import sys

from .workloads import run_phase


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in ("setup", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    phase, name, root, ack_path = argv
    run_phase(name, phase, root, ack_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
