#!/usr/bin/env python3
"""Edit Pulsar config files from environment variables, with the rules of Pulsar's image script
of the same name, so container set-ups written for apachepulsar/pulsar configure minipulsar:

    bin/apply-config-from-env.py [--prefix PULSAR_PREFIX_] conf/standalone.conf [more.conf ...]

For each file named:
  * a variable whose name is a key of the file (commented-out `#key=value` lines count) replaces
    that line: `clusterName=other` writes `clusterName=other`;
  * PULSAR_PREFIX_<key> (or --prefix's) adds <key> at the end of the file, or replaces the line of
    a key it already has: any key, known to the file or not.
conf/client.conf (beside the first file's conf/ folder, when it exists) also takes
CLIENT_PREFIX_<key> variables, added or replaced the same way; bin/pulsar-admin and the other tools
read it. Values are stripped of surrounding blanks and written into the files; each change is
printed, with the values of password-like and secret keys masked. Needs only Python 3's standard
library (it runs before anything else in the container).
"""
import argparse
import os
import sys

SECRET_KEYS = ("brokerClientAuthenticationParameters", "bookkeeperClientAuthenticationParameters",
               "tokenSecretKey", "basicAuthConf", "authParams")
CLIENT_PREFIX = "CLIENT_PREFIX_"


def shown(key, value):
    """The value as printed: masked for passwords and secrets."""
    if "password" in key.lower() or key in SECRET_KEYS:
        return "********"
    return value


def read_keys(lines):
    """{key: index of its line}, commented-out `#key=value` lines included."""
    keys = {}
    for index, line in enumerate(lines):
        text = line.strip()
        if "=" not in text:
            continue
        key = text.split("=", 1)[0].lstrip("#").strip()
        if key and " " not in key:
            keys[key] = index
    return keys


def apply(path, environ, prefix, bare_names=True):
    """Rewrite the file at path: bare names replace keys it has, prefix adds or replaces any key."""
    with open(path) as conf:
        lines = conf.read().splitlines()
    keys = read_keys(lines)
    for name in sorted(environ):
        if bare_names and name in keys:
            value = environ[name].strip()
            print("[%s] Applying config %s = %s" % (path, name, shown(name, value)))
            lines[keys[name]] = "%s=%s" % (name, value)
    for name in sorted(environ):
        if not name.startswith(prefix) or len(name) == len(prefix):
            continue
        key, value = name[len(prefix):], environ[name].strip()
        if key in keys:
            print("[%s] Updating config %s = %s" % (path, key, shown(key, value)))
            lines[keys[key]] = "%s=%s" % (key, value)
        else:
            print("[%s] Adding config %s = %s" % (path, key, shown(key, value)))
            keys[key] = len(lines)
            lines.append("%s=%s" % (key, value))
    with open(path, "w") as conf:
        conf.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Pulsar configuration file customizer based on environment variables")
    parser.add_argument("--prefix", default="PULSAR_PREFIX_",
                        help="prefix of the variables that add or replace any key (default PULSAR_PREFIX_)")
    parser.add_argument("conf_files", nargs="*", help="configuration files")
    args = parser.parse_args(argv)
    if not args.conf_files:
        parser.print_help()
        return 1
    environ = dict(os.environ)
    for path in args.conf_files:
        apply(path, environ, args.prefix)
    client_conf = os.path.join(os.path.dirname(os.path.abspath(args.conf_files[0])), "client.conf")
    if os.path.isfile(client_conf) and any(name.startswith(CLIENT_PREFIX) for name in environ):
        apply(client_conf, environ, CLIENT_PREFIX, bare_names=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
