"""The layout keeps its import cycles small: the topic tree never again shares one with the Broker,
the connection, the handlers and the web service (tools/import_cycles.py counts type-only imports
too). 52 modules were in one cycle before the topic tree got its TopicContext."""
import tools.import_cycles as cycles

LARGEST_CYCLE = 25  # modules; the topic tree (topic, subscriptions, dispatchers, selectors, replication)


def test_the_largest_import_cycle_stays_within_its_bound():
    components = cycles.strongly_connected(cycles.graph())
    assert components, "the counter finds no cycle at all: it no longer reads the rooms"
    assert len(components[0]) <= LARGEST_CYCLE, components[0]


def test_the_broker_service_is_in_no_cycle_with_the_topic_tree():
    for component in cycles.strongly_connected(cycles.graph()):
        assert not {"minipulsar.broker.broker", "minipulsar.broker.topic"} <= set(component), component


def test_the_counter_sees_a_cycle_through_a_type_only_import(tmp_path, monkeypatch):
    for room, text in (("broker", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from minipulsar.client import a\n"),
                       ("client", "from minipulsar.broker import b\n")):
        (tmp_path / room).mkdir()
        (tmp_path / room / ("b.py" if room == "broker" else "a.py")).write_text(text)
    monkeypatch.setattr(cycles, "ROOT", tmp_path)
    assert cycles.strongly_connected(cycles.graph()) == [["minipulsar.broker.b", "minipulsar.client.a"]]
