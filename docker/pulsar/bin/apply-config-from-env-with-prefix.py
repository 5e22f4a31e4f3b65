#!/usr/bin/env python3
"""Pulsar's image script of the same name: edit config files from environment variables with a
prefix given first (Testcontainers' Rust and .NET modules run it before `bin/pulsar standalone`):

    bin/apply-config-from-env-with-prefix.py PULSAR_PREFIX_ conf/standalone.conf
    bin/apply-config-from-env-with-prefix.py CLIENT_PREFIX_ conf/client.conf

<prefix><key> adds <key> to each file or replaces its line; a variable named as a key the file
already has (commented-out lines count) replaces that line. The rules and the printing are
apply-config-from-env.py's, beside this file.
"""
import importlib.util
import os
import sys


def main(argv):
    if len(argv) < 2:
        print("Usage: %s <PREFIX> <FILE> [<FILE>...]" % os.path.basename(sys.argv[0]))
        return 1
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("apply_config", os.path.join(here, "apply-config-from-env.py"))
    apply_config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(apply_config)
    prefix, environ = argv[0], dict(os.environ)
    for path in argv[1:]:
        apply_config.apply(path, environ, prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
