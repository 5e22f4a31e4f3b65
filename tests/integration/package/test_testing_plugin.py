"""minipulsar.testing: the pytest fixtures (loaded through the pytest11 entry point, as in any
project that installs minipulsar) and run_broker() for other frameworks, with the official client."""
import time

import pulsar
import pytest

from minipulsar.testing import run_broker


def test_the_session_fixture_is_a_real_broker(minipulsar_service_url, minipulsar_broker):
    assert minipulsar_service_url == minipulsar_broker.service_url
    client = pulsar.Client(minipulsar_service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("plugin-topic", "s")
        client.create_producer("plugin-topic").send(b"hello")
        assert consumer.receive(5000).data() == b"hello"
    finally:
        client.close()
    assert "listening on 127.0.0.1" in minipulsar_broker.log_path.read_text()


def test_run_broker_starts_passes_settings_and_cleans_up():
    started = time.monotonic()
    with run_broker({"brokerDeduplicationEnabled": "true"}) as broker:
        startup = time.monotonic() - started
        client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            producer = client.create_producer("dedup", producer_name="p", batching_enabled=False)
            for sequence_id in (0, 0, 1):
                producer.send(b"x", sequence_id=sequence_id)
            consumer = client.subscribe("dedup", "s", initial_position=pulsar.InitialPosition.Earliest)
            assert [consumer.receive(5000).data() for _ in range(2)] == [b"x", b"x"]
            with pytest.raises(pulsar.Timeout):
                consumer.receive(500)  # the duplicate was not stored
        finally:
            client.close()
        data_dir = broker.data_dir
        assert data_dir.exists()
    assert broker.process.poll() == 0 and not data_dir.exists()
    print(f"\nrun_broker() start-up: {startup:.2f} s")


def test_a_broker_that_cannot_start_reports_its_log():
    with pytest.raises(RuntimeError, match="maxMessageSize"):
        with run_broker({"maxMessageSize": "-1"}, startup_timeout=20):
            pass


def test_a_failing_test_shows_the_broker_log(pytester):
    """In another project: the fixtures come through the entry point, and a failure's report ends
    with the broker's log tail."""
    pytester.makepyfile(test_user="def test_fails(minipulsar_service_url):\n    assert minipulsar_service_url == 'nope'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*minipulsar broker log (last lines)*", "*minipulsar broker listening on 127.0.0.1*"])
