"""FunctionRuntime: the instances of one function, each an InstanceSupervisor, started and
stopped together or one by one (Pulsar's FunctionRuntimeManager for one worker).

An instance stopped through the API (FunctionRecord.stopped) is not started; its status shows it
not running.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

from minipulsar.functions.metadata import FunctionRecord
from minipulsar.functions.spec import InstanceSpec
from minipulsar.functions.supervisor import InstanceSupervisor


class FunctionRuntime:
    """record: the function; make_spec(record, instance id) and log_path(record, instance id): what
    each instance runs with and where its output goes."""

    def __init__(self, record: FunctionRecord, make_spec: Callable[[FunctionRecord, int], InstanceSpec],
                 log_path: Callable[[FunctionRecord, int], Path]):
        self.record = record
        self._make_spec = make_spec
        self._log_path = log_path
        self.supervisors: dict[int, InstanceSupervisor] = {}

    def start(self) -> None:
        """Start every instance not stopped through the API."""
        for instance_id in range(self.record.parallelism):
            if instance_id not in self.record.stopped:
                self._launch(instance_id)

    def _launch(self, instance_id: int) -> None:
        supervisor = InstanceSupervisor(self._make_spec(self.record, instance_id), self._log_path(self.record, instance_id))
        self.supervisors[instance_id] = supervisor
        supervisor.start()

    async def start_instance(self, instance_id: int) -> None:
        if instance_id not in self.supervisors:
            self._launch(instance_id)

    async def stop_instance(self, instance_id: int) -> None:
        supervisor = self.supervisors.pop(instance_id, None)
        if supervisor is not None:
            await supervisor.stop()

    async def restart_instance(self, instance_id: int) -> None:
        """Stop the instance and start it again (a stopped instance stays stopped)."""
        if instance_id in self.supervisors:
            await self.stop_instance(instance_id)
            self._launch(instance_id)

    async def stop(self) -> None:
        await asyncio.gather(*(self.stop_instance(i) for i in list(self.supervisors)))
