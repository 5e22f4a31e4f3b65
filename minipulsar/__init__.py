"""minipulsar: a standalone broker on asyncio that speaks the Apache Pulsar binary protocol.

Everything installs under this one namespace: `minipulsar.broker` (the server),
`minipulsar.cli` (the `minipulsar` command line), `minipulsar.client` (the bundled asyncio client),
`minipulsar.proto` (wire format), `minipulsar.storage` (managed ledger and cursors) and
`minipulsar.pipeline` (the PySpark data source and sink). The folders sit at the top of the
source repository; setuptools maps them here.
"""
__version__ = "0.1.0"
