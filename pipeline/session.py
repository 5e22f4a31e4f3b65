"""A SparkSession for the example and the tests, with the "pulsar" format registered.

Spark starts its Python workers with ``PYSPARK_PYTHON`` (else ``python3`` on the PATH), which
must be an interpreter that can import ``pipeline`` and ``client``: this sets it, and
``PYSPARK_DRIVER_PYTHON``, to the running interpreter unless they are already set. On a cluster,
install minipulsar (``pip install 'minipulsar[spark]'``) on every executor instead.

On a ``local`` master it also binds Spark to the loopback address (``SPARK_LOCAL_IP``, unless
set), which is where a local session's driver and executors talk anyway, and which spares the
"hostname resolves to a loopback address" warning.

``stop_session`` stops a session without the state store maintenance task firing into it.

``log_level`` sets the JVM's log level from the very start, through a log4j2 configuration file
written for the session: ``SparkContext.setLogLevel`` only takes effect once the context is up,
after Spark has already printed its start-up warnings.
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
import tempfile

log = logging.getLogger(__name__)

# Loggers whose warnings say nothing a local user can act on.
QUIET_LOGGERS = {
    "org.apache.hadoop.util.NativeCodeLoader": "ERROR",  # no native Hadoop library: the Java one is used
}

LOG4J2_TEMPLATE = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# Spark takes a PySpark driver for a shell, whose console level is its main class's logger's
# (WARN unless set); set alike, Spark neither overrides the root level nor says that it does.
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = {level}
"""


def log4j2_config(level: str, quiet: dict[str, str] | None = None) -> str:
    """The text of a log4j2 properties file: everything at level, the loggers in quiet at theirs."""
    lines = [LOG4J2_TEMPLATE.format(level=level.upper())]
    for i, (name, logger_level) in enumerate({**QUIET_LOGGERS, **(quiet or {})}.items()):
        lines.append(f"logger.q{i}.name = {name}\nlogger.q{i}.level = {logger_level}\n")
    return "".join(lines)


def _log4j2_java_option(level: str, quiet: dict[str, str] | None) -> str:
    handle, path = tempfile.mkstemp(prefix="minipulsar-log4j2-", suffix=".properties")
    with os.fdopen(handle, "w") as out:
        out.write(log4j2_config(level, quiet))
    atexit.register(os.unlink, path)  # log4j2 reads it once, when the JVM starts
    return f"-Dlog4j2.configurationFile=file:{path}"


def local_session(app_name: str = "minipulsar", master: str = "local[2]", log_level: str | None = None,
                  quiet_loggers: dict[str, str] | None = None, **conf: str):
    """getOrCreate a SparkSession on master with conf (Spark keys -> values) and register the
    "pulsar" format. Small defaults for a laptop: 2 shuffle partitions, no UI.

    log_level (e.g. "WARN"), when given, is the JVM's log level from start-up on, with the loggers
    of quiet_loggers (name -> level) set apart; it applies only when this call starts the JVM.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from minipulsar.pipeline import register

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                "spark.sql.session.timeZone": "UTC", **conf}
    if log_level:
        option = _log4j2_java_option(log_level, quiet_loggers)
        extra = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = f"{extra} {option}" if extra else option
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    log.info("SparkSession %s on %s (Spark %s)", app_name, master, spark.version)
    return spark


def stop_session(spark) -> None:
    """Stop Spark's state store maintenance task, then the session.

    Spark runs StateStore maintenance on a timer of its own thread
    (``spark.sql.streaming.stateStore.maintenanceInterval``, 60 s by default). A round that fires
    while ``SparkSession.stop()`` is under way finds no SparkEnv and logs a WARN with the stack
    trace of an IllegalStateException ("SparkEnv not active"). ``StateStore.stop()`` unloads the
    state store providers and ends that task first, so nothing is left to fire. It is skipped while
    a streaming query is still active (a forced stop): its micro-batch may still use a provider.
    """
    if not spark.streams.active:
        spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    spark.stop()
