"""The `minipulsar` command line's verb groups, one module each (the router is minipulsar.broker.cli):
`broker` runs a broker, `client` mirrors pulsar-client, `perf` mirrors pulsar-perf and `admin`
mirrors pulsar-admin over the REST API; `runtime` is what they share."""
