"""The `bin/` tools of Pulsar's distribution, run by minipulsar's own verbs, so that scripts, compose
files, CI jobs and Testcontainers modules written for the apachepulsar/pulsar image run unchanged
(the image's /pulsar/bin/* call this module; docs/operations.md).

    python -m minipulsar.cli.pulsar_tools TOOL [ARGS...]

    pulsar standalone [Pulsar's standalone flags]    `minipulsar standalone` with $PULSAR_STANDALONE_CONF
                                                     (default conf/standalone.conf) and data/standalone
    pulsar broker [flags]                            `minipulsar broker` with $PULSAR_BROKER_CONF
                                                     (default conf/broker.conf, when it exists)
    pulsar tokens VERB ...                           `minipulsar tokens`
    pulsar-admin [options] GROUP VERB ...            `minipulsar admin`, defaults from conf/client.conf
    pulsar-client [options] produce|consume ...      `minipulsar client`, defaults from conf/client.conf
    pulsar-perf produce|consume ...                  `minipulsar perf`, defaults from conf/client.conf
    pulsar-daemon start|stop standalone|broker ...   `pulsar ...` in the background: its output in
                                                     $PULSAR_LOG_DIR (logs/), its pid in $PULSAR_PID_DIR (bin/)

Paths are Pulsar's: conf/ under $PULSAR_HOME (the image sets /pulsar; default the working
folder); the standalone's data under the working folder's data/standalone, as Pulsar's. Options
given on the command line come after those read from client.conf, so they win. Exit statuses are
the verbs' own; 2 for a command minipulsar does not run.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping

from minipulsar import cli
from minipulsar.cli import client_conf

STANDALONE_DATA_DIR = "data/standalone"  # Pulsar standalone's data, relative to the working folder
STOP_POLL_SECONDS = 0.1  # pulsar-daemon stop: how often it looks whether the process has ended
EXIT_USAGE = 2


def home(environ: Mapping[str, str] = os.environ) -> Path:
    """$PULSAR_HOME, else the working folder."""
    return Path(environ.get("PULSAR_HOME") or os.getcwd())


def pulsar_argv(args: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """`pulsar COMMAND ...` as minipulsar's argv; raises ValueError for a command it does not run."""
    if not args or args[0] in ("-h", "--help"):
        raise ValueError("usage: pulsar standalone|broker|tokens [ARGS...]")
    command, rest = args[0], args[1:]
    if command == "standalone":
        conf = environ.get("PULSAR_STANDALONE_CONF") or str(home(environ) / "conf" / "standalone.conf")
        return ["standalone", "--config", conf, "--data-dir", STANDALONE_DATA_DIR, *rest]
    if command == "broker":
        conf = Path(environ.get("PULSAR_BROKER_CONF") or home(environ) / "conf" / "broker.conf")
        return ["broker", *(["--config", str(conf)] if conf.is_file() else []), *rest]
    if command == "tokens":
        return ["tokens", *rest]
    raise ValueError(f"pulsar: {command!r} is not a command minipulsar runs (standalone, broker, tokens)")


def _conf(environ: Mapping[str, str]) -> dict[str, str]:
    return client_conf.read_client_conf(client_conf.client_conf_path(home(environ), environ))


def admin_argv(args: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """`pulsar-admin ...` as `minipulsar admin ...` with client.conf's URL, auth and TLS first."""
    return ["admin", *client_conf.admin_flags(_conf(environ)), *args]


def client_argv(args: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """`pulsar-client ...` as `minipulsar client ...` with client.conf's URL, auth and TLS first."""
    conf = _conf(environ)
    url = client_conf.service_url(conf)
    return ["client", *(["--url", url] if url else []), *client_conf.auth_flags(conf),
            *client_conf.tls_flags(conf), *args]


def perf_argv(args: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """`pulsar-perf VERB ...` as `minipulsar perf VERB ...`; client.conf's settings follow the verb
    (pulsar-perf's options belong to its verbs)."""
    if not args or args[0].startswith("-"):
        return ["perf", *args]
    conf = _conf(environ)
    url = client_conf.service_url(conf)
    return ["perf", args[0], *(["--service-url", url] if url else []), *client_conf.auth_flags(conf),
            *client_conf.tls_flags(conf), *args[1:]]


# ---- pulsar-daemon ---------------------------------------------------------------------------
def daemon(args: list[str], environ: Mapping[str, str] = os.environ) -> int:
    """`pulsar-daemon start|stop SERVICE [ARGS...]`, as Pulsar's bin/pulsar-daemon."""
    if len(args) < 2 or args[0] not in ("start", "stop"):
        print("usage: pulsar-daemon start|stop standalone|broker [ARGS...]", file=sys.stderr)
        return EXIT_USAGE
    action, service, rest = args[0], args[1], args[2:]
    pid_file = Path(environ.get("PULSAR_PID_DIR") or home(environ) / "bin") / f"pulsar-{service}.pid"
    if action == "start":
        return _daemon_start(service, rest, pid_file, environ)
    return _daemon_stop(service, pid_file, float(environ.get("PULSAR_STOP_TIMEOUT") or 30))


def _running(pid_file: Path) -> int | None:
    """The pid in pid_file when that process is alive."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _daemon_start(service: str, rest: list[str], pid_file: Path, environ: Mapping[str, str]) -> int:
    pid = _running(pid_file)
    if pid is not None:
        print(f"{service} running as process {pid}.  Stop it first.", file=sys.stderr)
        return 1
    pulsar_argv([service, *rest], environ)  # a command it does not run fails here, not in the background
    log_dir = Path(environ.get("PULSAR_LOG_DIR") or home(environ) / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / f"pulsar-{service}-{socket.gethostname()}.log"
    print(f"starting {service}, logging to {log_file}")
    with open(log_file, "ab") as log, open(os.devnull, "rb") as nothing:
        proc = subprocess.Popen([sys.executable, "-m", "minipulsar.cli.pulsar_tools", "pulsar", service, *rest],
                                stdin=nothing, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(environ))
    pid_file.write_text(f"{proc.pid}\n")
    return 0


def _daemon_stop(service: str, pid_file: Path, timeout: float) -> int:
    pid = _running(pid_file)
    if pid is None:
        print(f"no {service} to stop")
        pid_file.unlink(missing_ok=True)
        return 1
    print(f"stopping {service}")
    os.kill(pid, signal.SIGTERM)  # a clean shutdown, as the broker takes SIGTERM
    deadline = time.monotonic() + timeout
    while _running(pid_file) is not None and time.monotonic() < deadline:
        time.sleep(STOP_POLL_SECONDS)  # the poll interval of this deadline-bounded wait
    if _running(pid_file) is not None:
        print(f"{service} did not stop within {timeout:g} s; killing it with SIGKILL")
        os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    return 0


TOOLS = {"pulsar": pulsar_argv, "pulsar-admin": admin_argv, "pulsar-client": client_argv, "pulsar-perf": perf_argv}


def main(argv: list[str] | None = None) -> int:
    """Run TOOL with ARGS (argv default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0] not in TOOLS and argv[0] != "pulsar-daemon"):
        print(f"usage: python -m minipulsar.cli.pulsar_tools {'|'.join([*TOOLS, 'pulsar-daemon'])} [ARGS...]",
              file=sys.stderr)
        return EXIT_USAGE
    tool, args = argv[0], argv[1:]
    if tool == "pulsar-daemon":
        return daemon(args)
    try:
        minipulsar_argv = TOOLS[tool](args)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    return cli.main(minipulsar_argv)


if __name__ == "__main__":
    sys.exit(main())
