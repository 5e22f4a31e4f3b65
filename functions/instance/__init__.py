"""The function instance: the process that runs one instance of a function
(`python -m minipulsar.functions.instance`), its consume-process-produce loop (runner, inputs),
the Context user code receives (context), user code loading (loader), its counters and reports to
the worker (stats), its client connection (session) and its logger (logs).

It runs on the official Python client (pulsar-client, the `functions` extra): the package users
write functions against (pulsar.Function, pulsar.functions.context.Context) is the one their code
imports anyway, and its C++ core does the network I/O, batching and acknowledgement tracking
off the interpreter's lock, so the function's own Python code has the process's core to itself.
"""
