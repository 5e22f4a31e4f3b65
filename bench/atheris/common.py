"""Shared start-up of the atheris harnesses in this folder (run by hand, one at a time):

    python bench/atheris/fuzz_frames.py --minutes 5 [--corpus DIR] [libFuzzer flags ...]

`--minutes` becomes libFuzzer's -max_total_time; the corpus folder (default: one per harness under
the system temp dir, kept between runs so a later run goes on from what an earlier one found) is
seeded with well-formed inputs when empty. Everything else goes to libFuzzer as given. The
properties themselves live in tests/fuzz/oracles.py, shared with the hypothesis tests in CI. An input
that breaks a property crashes the run; libFuzzer writes it to crash-<sha1> in the --crashes folder.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def _arguments(name: str) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(add_help=True, description=f"atheris harness: {name}")
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), f"minipulsar-atheris-{name}"))
    parser.add_argument("--crashes", default=os.path.join(tempfile.gettempdir(), f"minipulsar-atheris-{name}-crashes"),
                        help="folder for the inputs that break a property")
    return parser.parse_known_args()


def _seed(corpus: str, seeds: list[bytes]) -> None:
    os.makedirs(corpus, exist_ok=True)
    if not os.listdir(corpus):
        for i, seed in enumerate(seeds):
            with open(os.path.join(corpus, f"seed-{i:03d}"), "wb") as f:
                f.write(seed)


def run(name: str, test_one_input, seeds: list[bytes]) -> None:
    """Fuzz test_one_input (bytes -> None) with libFuzzer until --minutes pass or it crashes."""
    import atheris

    args, rest = _arguments(name)
    _seed(args.corpus, seeds)
    os.makedirs(args.crashes, exist_ok=True)
    logging.disable(logging.CRITICAL)  # corrupt inputs log an error each; the property is what counts
    argv = [sys.argv[0], args.corpus, f"-max_total_time={int(args.minutes * 60)}", "-print_final_stats=1",
            "-rss_limit_mb=4096", f"-artifact_prefix={args.crashes}/", *rest]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
