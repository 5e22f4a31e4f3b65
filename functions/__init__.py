"""Pulsar Functions for Python (the `functions` room, installed as minipulsar.functions).

The function worker runs inside the broker (functionsWorkerEnabled, on by default as in
`pulsar standalone`): worker (the facade the broker starts and the web service calls), config
(FunctionConfig: defaults, Pulsar's checks, the stored form), metadata and packages (durable under
<dataDir>/functions), runtime and supervisor (each instance a process of its own, restarted with
back-off), status and metrics (Pulsar's FunctionStatus / FunctionStats JSON, pulsar_function_*
metrics), state (Context state and the state REST calls), trigger (the worker's own client),
spec (what an instance is told), localrun (`minipulsar admin functions localrun`), errors. The
instance process itself is the `instance` package.

It may import minipulsar.proto and minipulsar.client; the broker starts the worker through
WorkerSettings and FunctionWorker, and the worker never imports the broker.
"""
