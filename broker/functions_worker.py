"""The broker's side of the functions seam: what the function worker (minipulsar.functions) is
given, and the two things it may ask of the broker.

The worker gets a WorkerSettings: its folder (<dataDir>/functions), the broker's service URL, the
credentials of the broker's own clients (brokerClientAuthenticationPlugin / ...Parameters: give
that role super-user rights, as Pulsar's worker needs), the CAs of a TLS-only broker, Pulsar's
worker id (c-<cluster>-fw-<host>-<web port>), and two calls: delete a subscription (when a function
is deleted; it never creates a topic) and list a namespace's topics (to resolve a topic pattern).
It is started once the binary port listens (instances connect to it) and stopped before the
broker closes its connections, so instances flush their outputs and close their consumers
cleanly.

`broker` below is the Broker; it is not imported here, even for type checking, so this module
stays out of the Broker's import cycle with the web service (tools/import_cycles.py).
"""
from __future__ import annotations

import logging
from pathlib import Path

from minipulsar.broker.topic_name import TopicName
from minipulsar.functions.worker import FunctionWorker, WorkerSettings

log = logging.getLogger(__name__)


def worker_settings(broker) -> WorkerSettings:
    config = broker.config
    url = broker.service_url
    return WorkerSettings(
        folder=Path(config.data_dir) / "functions", service_url=url, cluster=config.cluster_name,
        worker_id=f"c-{config.cluster_name}-fw-{config.advertised_host}-{broker.web.port or broker.web.port_tls}",
        auth_plugin=config.broker_client_authentication_plugin.strip(),
        auth_params=config.broker_client_authentication_parameters,
        tls_trust_certs_file_path=config.tls_trust_certs_file_path if url.startswith("pulsar+ssl://") else "",
        negative_ack_redelivery_delay_ms=config.functions_negative_ack_redelivery_delay_ms,
        client_authentication=broker.security.broker_client_authentication(),
        delete_subscription=lambda topic, subscription: delete_subscription(broker, topic, subscription),
        list_topics=broker.list_topics)


async def start_functions_worker(broker) -> FunctionWorker | None:
    """The started worker, or None with functionsWorkerEnabled=false."""
    if not broker.config.functions_worker_enabled:
        return None
    worker = FunctionWorker(worker_settings(broker))
    await worker.start()
    # Pulsar's PulsarService line, which Testcontainers' withFunctionsWorker() waits for
    log.info("Function worker service started")
    return worker


async def delete_subscription(broker, topic: str, subscription: str) -> None:
    """Remove subscription from topic (each partition of a partitioned one), disconnecting its
    consumers; a topic or subscription that does not exist is skipped."""
    name = TopicName.parse(topic)
    count = broker.partition_count(name)
    for part in [name.partition(i) for i in range(count)] if count else [name]:
        if part.domain == "persistent":
            if not broker.factory.exists(part.storage_name):
                continue
            loaded = await broker.get_topic(part, create=False)
        else:
            loaded = broker.non_persistent_topics.get(str(part))
        found = loaded.subscriptions.get(subscription) if loaded is not None else None
        if found is not None:
            found.disconnect_consumers()
            await loaded.remove_subscription(subscription)
            log.info("deleted subscription %s of %s", subscription, part)
