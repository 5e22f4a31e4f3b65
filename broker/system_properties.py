"""Pulsar's JVM system properties, read where Pulsar's scripts put them.

Pulsar's bin/pulsar starts the JVM with $PULSAR_MEM $PULSAR_GC $PULSAR_EXTRA_OPTS on its command
line, so a `-Dname=value` in any of them is a system property of the broker (Pulsar's CI passes
`-Dpulsar.auth.basic.conf=...` that way). minipulsar has no JVM: it reads the same variables
from its environment. Only the properties the broker honours are looked up
(`pulsar.auth.basic.conf`, broker/security/basic_provider.py); every other option in these
variables is a JVM option with no meaning here (`minipulsar broker` and `standalone` report them in one INFO line).
"""
from __future__ import annotations

import os
import shlex
from typing import Mapping

JVM_OPTION_VARIABLES = ("PULSAR_MEM", "PULSAR_GC", "PULSAR_EXTRA_OPTS")
HONOURED_PROPERTIES = ("pulsar.auth.basic.conf",)  # the -D properties the broker reads


def jvm_options(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Every option of PULSAR_MEM, PULSAR_GC and PULSAR_EXTRA_OPTS, in that order (shell words)."""
    options = []
    for name in JVM_OPTION_VARIABLES:
        value = environ.get(name, "")
        try:
            options.extend(shlex.split(value))
        except ValueError:  # an unbalanced quote: the words as the shell would not split them
            options.extend(value.split())
    return options


def system_properties(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """{name: value} of the `-Dname=value` options (the last one wins, as in the JVM)."""
    found = {}
    for option in jvm_options(environ):
        if option.startswith("-D") and len(option) > 2:
            name, _, value = option[2:].partition("=")
            found[name] = value
    return found


def system_property(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The value of -D<name>=... in the JVM option variables, None when absent."""
    return system_properties(environ).get(name)
