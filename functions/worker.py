"""The function worker: Pulsar's functions worker, inside the broker's process, for Python
functions.

The broker builds a WorkerSettings (what the worker needs, given explicitly: its folder, the
broker's service URL and credentials, how to delete a subscription and list a namespace's topics)
and calls start() once its binary port listens and stop() before it closes connections; the web
service calls the methods below for /admin/v3/functions. The worker never reaches into the broker.

Everything lives under its folder (<dataDir>/functions): metadata.json (the functions), packages/,
state/ (their state tables), logs/ (their instances' output) and run/ (each instance's work
folder). Each function runs `parallelism` instance processes, one InstanceSupervisor each
(minipulsar.functions.supervisor); they come back after a broker restart and resume from their
subscription. Errors are minipulsar.functions.errors, each with Pulsar's HTTP status.
Source: Pulsar FunctionsImpl / ComponentImpl, FunctionMetaDataManager, FunctionRuntimeManager.
"""
from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

from prometheus_client.metrics_core import Metric

from minipulsar.functions import config as function_config
from minipulsar.functions import metrics, status
from minipulsar.functions.durable_folders import make_folders_durably
from minipulsar.functions.errors import (FunctionExistsError, FunctionNotFoundError, InvalidFunctionError,
                                         StateKeyNotFoundError, WorkerUnavailableError)
from minipulsar.functions.metadata import FunctionRecord, MetadataStore
from minipulsar.functions.packages import PackageStore, StagedPackage
from minipulsar.functions.runtime import FunctionRuntime
from minipulsar.functions.spec import InstanceSpec
from minipulsar.functions.state import StateTable, function_state, remove_table, state_path, value_of
from minipulsar.functions.trigger import Triggers

log = logging.getLogger(__name__)
NOT_READY = "Function worker service is not done initializing. Please try again in a little while."


@dataclass
class WorkerSettings:
    """folder: the worker's own folder (<dataDir>/functions); service_url: the broker's URL the
    instances and the worker's client use; cluster: its name (a metrics label); worker_id: Pulsar's
    c-<cluster>-fw-<host>-<port>; auth_plugin / auth_params: what the instances authenticate with
    (brokerClientAuthenticationPlugin / Parameters); tls_trust_certs_file_path: CAs of a
    pulsar+ssl:// URL; negative_ack_redelivery_delay_ms: the instances' negative-ack delay;
    client_authentication: the bundled client's Authentication for the worker's own client;
    delete_subscription(topic, subscription): removes a subscription (and disconnects its
    consumers) without creating the topic; list_topics(namespace): the namespace's topics."""

    folder: Path
    service_url: str
    cluster: str = "standalone"
    worker_id: str = ""
    auth_plugin: str = ""
    auth_params: str = ""
    tls_trust_certs_file_path: str = ""
    negative_ack_redelivery_delay_ms: int = 60_000
    client_authentication: Any = None
    delete_subscription: Callable[[str, str], Awaitable[None]] | None = None
    list_topics: Callable[[str], list[str]] = field(default=lambda namespace: [])


class FunctionWorker:
    """The worker; start() before use, stop() at the end."""

    def __init__(self, settings: WorkerSettings):
        self.settings = settings
        # absolute: a relative dataDir (the image's data/standalone) names the broker's working
        # folder, and each instance runs in a folder of its own
        self.folder = settings.folder.resolve()
        self.metadata = MetadataStore(self.folder / "metadata.json")
        self.packages = PackageStore(self.folder / "packages")
        self.runtimes: dict[str, FunctionRuntime] = {}
        self.triggers = Triggers(settings)
        self._tables: dict[str, StateTable] = {}
        self._lock = asyncio.Lock()  # one change of the function set at a time
        self.running = False

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Load the functions and start their instances (they resume from their subscriptions)."""
        await asyncio.to_thread(make_folders_durably, self.folder)  # the folders below trust it
        await self.metadata.load()
        await self.packages.clear_staging()
        for record in self.metadata.records.values():
            self._runtime(record).start()
        self.running = True
        if self.metadata.records:
            log.info("function worker started %d function(s)", len(self.metadata.records))

    async def stop(self) -> None:
        """Stop every instance (they flush their outputs and close their consumers)."""
        self.running = False
        await asyncio.gather(*(runtime.stop() for runtime in self.runtimes.values()))
        self.runtimes.clear()
        await self.triggers.close()
        for table in self._tables.values():
            table.close()
        self._tables.clear()

    def _check_running(self) -> None:
        if not self.running:
            raise WorkerUnavailableError(NOT_READY)

    def _runtime(self, record: FunctionRecord) -> FunctionRuntime:
        runtime = self.runtimes[record.fqfn] = FunctionRuntime(record, self._spec, self._log_path)
        return runtime

    def _spec(self, record: FunctionRecord, instance_id: int) -> InstanceSpec:
        s = self.settings
        return InstanceSpec(
            config=record.config, instance_id=instance_id, function_id=record.function_id,
            function_version=record.version, package=str(self.folder / record.package),
            work_dir=str(self.folder.joinpath("run", *record.fqfn.split("/"), str(instance_id))),
            state_dir=str(self.folder / "state"), service_url=s.service_url, cluster=s.cluster,
            auth_plugin=s.auth_plugin, auth_params=s.auth_params, tls_trust_certs_file_path=s.tls_trust_certs_file_path,
            negative_ack_redelivery_delay_ms=s.negative_ack_redelivery_delay_ms)

    def _log_path(self, record: FunctionRecord, instance_id: int) -> Path:
        name = record.config["name"]
        return self.folder.joinpath("logs", *record.fqfn.split("/"), f"{name}-{instance_id}.log")

    def _record(self, tenant: str, namespace: str, name: str) -> FunctionRecord:
        record = self.metadata.get(f"{tenant}/{namespace}/{name}")
        if record is None:
            raise FunctionNotFoundError(f"Function {name} doesn't exist")
        return record

    # ---- packages ------------------------------------------------------------------------
    async def stage_upload(self, chunks: AsyncIterator[bytes], file_name: str | None) -> StagedPackage:
        """Store an uploaded package (the multipart `data` part) until create/update takes it."""
        self._check_running()
        return await self.packages.stage_upload(chunks, file_name)

    async def stage_url(self, url: str) -> StagedPackage:
        """Fetch the package a `url` form field names (file:, http:, https:)."""
        self._check_running()
        return await self.packages.stage_url(url)

    async def discard(self, staged: StagedPackage | None) -> None:
        """Forget a staged package create/update did not take (safe after a commit)."""
        await self.packages.discard(staged)

    # ---- create, update, delete ------------------------------------------------------------
    async def create(self, tenant: str, namespace: str, name: str, raw: dict, package: StagedPackage | None) -> None:
        """Register and start a function; raises FunctionExistsError, InvalidFunctionError."""
        self._check_running()
        async with self._lock:
            if self.metadata.get(f"{tenant}/{namespace}/{name}") is not None:
                raise FunctionExistsError(f"Function {name} already exists")
            stored = function_config.normalize(raw, tenant, namespace, name)
            if package is None:
                raise InvalidFunctionError("Function package is not provided")
            record = FunctionRecord(config=stored, version=0, create_time=int(time.time() * 1000),
                                    function_id=str(uuid.uuid4()), package="")
            record.package = await self.packages.commit(package, record.fqfn, record.version, stored["className"])
            self.metadata.records[record.fqfn] = record
            await self.metadata.save()
            if self.running:  # a stop that came meanwhile: it runs at the next start
                self._runtime(record).start()
        log.info("created function %s (parallelism %d)", record.fqfn, record.parallelism)
        if importlib.util.find_spec("pulsar") is None:
            log.warning("function %s cannot run: the pulsar-client package is not installed (pip install "
                        "'minipulsar[functions]'); its status says so", record.fqfn)

    async def update(self, tenant: str, namespace: str, name: str, raw: dict, package: StagedPackage | None) -> None:
        """Apply an update (Pulsar's validateUpdate) and restart the instances with it; raises
        FunctionNotFoundError (400 here, as Pulsar), InvalidFunctionError."""
        self._check_running()
        async with self._lock:
            record = self.metadata.get(f"{tenant}/{namespace}/{name}")
            if record is None:
                raise InvalidFunctionError(f"Function {name} doesn't exist")
            merged = function_config.merge_update(record.config, raw)
            if merged == record.config and package is None:
                raise InvalidFunctionError("Update contains no change")
            new = FunctionRecord(config=merged, version=record.version + 1, create_time=int(time.time() * 1000),
                                 function_id=record.function_id, package=record.package, stopped=set(record.stopped))
            if package is not None:
                new.package = await self.packages.commit(package, new.fqfn, new.version, merged["className"])
            runtime = self.runtimes.pop(record.fqfn, None)
            if runtime is not None:  # unacknowledged inputs wait for the new instances
                await runtime.stop()
            self.metadata.records[new.fqfn] = new
            await self.metadata.save()
            if self.running:
                self._runtime(new).start()
            if new.package != record.package:
                await self.packages.remove_version(record.package)
        log.info("updated function %s to version %d", new.fqfn, new.version)

    async def delete(self, tenant: str, namespace: str, name: str) -> None:
        """Stop the instances, delete the subscription (cleanupSubscription), package and state."""
        self._check_running()
        async with self._lock:
            record = self._record(tenant, namespace, name)
            runtime = self.runtimes.pop(record.fqfn, None)
            if runtime is not None:
                await runtime.stop()
            del self.metadata.records[record.fqfn]
            await self.metadata.save()
            if record.config["cleanupSubscription"]:
                await self.triggers.delete_subscriptions(record.config)
            await self.packages.remove_function(record.fqfn)
            await self._drop_state(record.fqfn)
        log.info("deleted function %s", record.fqfn)

    async def _drop_state(self, fqfn: str) -> None:
        table = self._tables.pop(fqfn, None)
        path = state_path(self.folder / "state", fqfn)
        loop = asyncio.get_running_loop()
        if table is not None:
            await loop.run_in_executor(None, table.close)
        await loop.run_in_executor(None, remove_table, path)

    # ---- reading -------------------------------------------------------------------------
    def get(self, tenant: str, namespace: str, name: str) -> dict:
        """The stored FunctionConfig."""
        self._check_running()
        return self._record(tenant, namespace, name).config

    def list(self, tenant: str, namespace: str) -> list[str]:
        self._check_running()
        return self.metadata.names_in(tenant, namespace)

    def status(self, tenant: str, namespace: str, name: str, instance_id: int | None = None) -> dict:
        """FunctionStatus, or one instance's FunctionInstanceStatusData."""
        self._check_running()
        record = self._record(tenant, namespace, name)
        supervisors = self._supervisors(record)
        if instance_id is None:
            return status.function_status(record, supervisors, self.settings.worker_id)
        self._check_instance(record, instance_id)
        return status.instance_status(supervisors.get(instance_id), self.settings.worker_id)

    def stats(self, tenant: str, namespace: str, name: str, instance_id: int | None = None) -> dict:
        """FunctionStats, or one instance's FunctionInstanceStatsData."""
        self._check_running()
        record = self._record(tenant, namespace, name)
        supervisors = self._supervisors(record)
        if instance_id is None:
            return status.function_stats(record, supervisors)
        self._check_instance(record, instance_id)
        return status.instance_stats(supervisors.get(instance_id))

    def _supervisors(self, record: FunctionRecord) -> dict:
        """The function's running supervisors (none while an update swaps its instances)."""
        runtime = self.runtimes.get(record.fqfn)
        return runtime.supervisors if runtime is not None else {}

    @staticmethod
    def _check_instance(record: FunctionRecord, instance_id: int) -> None:
        if not 0 <= instance_id < record.parallelism:
            raise InvalidFunctionError("Invalid Instance Id")

    def metric_families(self) -> list[Metric]:
        """The instances' Prometheus families (minipulsar.functions.metrics)."""
        instances = [(fqfn, i, supervisor) for fqfn, runtime in self.runtimes.items()
                     for i, supervisor in sorted(runtime.supervisors.items())]
        return metrics.families(instances, self.settings.cluster)

    # ---- start, stop, restart ------------------------------------------------------------
    async def start_instances(self, tenant: str, namespace: str, name: str, instance_id: int | None = None) -> None:
        await self._change_instances(tenant, namespace, name, instance_id, "start")

    async def stop_instances(self, tenant: str, namespace: str, name: str, instance_id: int | None = None) -> None:
        await self._change_instances(tenant, namespace, name, instance_id, "stop")

    async def restart_instances(self, tenant: str, namespace: str, name: str, instance_id: int | None = None) -> None:
        await self._change_instances(tenant, namespace, name, instance_id, "restart")

    async def _change_instances(self, tenant: str, namespace: str, name: str, instance_id: int | None,
                                action: str) -> None:
        self._check_running()
        async with self._lock:
            record = self._record(tenant, namespace, name)
            ids = range(record.parallelism) if instance_id is None else [instance_id]
            if instance_id is not None:
                self._check_instance(record, instance_id)
            runtime = self.runtimes.get(record.fqfn)
            if runtime is None:
                raise WorkerUnavailableError(NOT_READY)
            if action != "restart":
                record.stopped = record.stopped - set(ids) if action == "start" else record.stopped | set(ids)
                await self.metadata.save()
            await asyncio.gather(*(getattr(runtime, f"{action}_instance")(i) for i in ids))

    # ---- trigger and state -----------------------------------------------------------------
    async def trigger(self, tenant: str, namespace: str, name: str, data: bytes, topic: str | None) -> str | None:
        """Send data to an input topic and answer the output it produced (None without an output
        topic); raises InvalidFunctionError, TriggerTimeoutError."""
        self._check_running()
        return await self.triggers.trigger(self._record(tenant, namespace, name).config, data, topic)

    async def get_state(self, tenant: str, namespace: str, name: str, key: str) -> dict:
        """Pulsar's FunctionState of key; StateKeyNotFoundError when it was never written."""
        table = await self._table(self._record(tenant, namespace, name).fqfn)
        entry = await asyncio.get_running_loop().run_in_executor(None, table.get, key)
        if entry is None:
            raise StateKeyNotFoundError(f"key '{key}' doesn't exist.")
        return function_state(key, entry)

    async def put_state(self, tenant: str, namespace: str, name: str, key: str, state: Any) -> None:
        """Store a FunctionState's value under key (stringValue, else byteValue)."""
        table = await self._table(self._record(tenant, namespace, name).fqfn)
        await asyncio.get_running_loop().run_in_executor(None, table.put, key, value_of(key, state))

    async def _table(self, fqfn: str) -> StateTable:
        self._check_running()
        table = self._tables.get(fqfn)
        if table is None:  # opening creates folders and the file: off the loop
            table = await asyncio.get_running_loop().run_in_executor(
                None, StateTable, state_path(self.folder / "state", fqfn))
            table = self._tables.setdefault(fqfn, table)
        return table
