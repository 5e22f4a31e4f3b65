"""Pulsar's processing semantics, observed with the official client: parallelism, Shared,
Failover and Key_Shared subscriptions, exceptions negatively acknowledged and retried into a dead
letter topic, a None result, ATMOST_ONCE, an update that takes over the backlog, trigger, instance
start/stop/restart."""
from __future__ import annotations

from tests.helpers import wait_for
from tests.integration.functions.support import collect, create_and_wait, instance_pids, write_package

WHO = """
    from pulsar import Function

    class Who(Function):
        def process(self, input, context):
            return "%s:%s" % (context.get_instance_id(), input)
"""
FLAKY = """
    def process(input):
        if input.startswith("bad"):
            raise ValueError("cannot take " + input)
        return input + "!"
"""
SKIPPER = """
    def process(input):
        return None if input.startswith("skip") else input + "!"
"""
SLOW = """
    import time

    def process(input):
        time.sleep(0.02)
        return input + "{mark}"
"""


def test_parallelism_two_runs_two_instance_processes_sharing_the_subscription(broker, functions, official, code,
                                                                               tmp_path):
    package = write_package(code, "who.py", WHO)
    status = create_and_wait(functions, "who", {"className": "who.Who", "inputs": ["par-in"], "output": "par-out",
                                                "parallelism": 2}, package, instances=2)
    assert [i["instanceId"] for i in status["instances"]] == [0, 1]
    assert len(instance_pids(tmp_path)) == 2
    out = official.subscribe("par-out", "check")
    producer = official.create_producer("par-in", batching_enabled=False)
    for i in range(200):
        producer.send(str(i).encode())
    got = collect(out, 200)
    by_instance = {}
    for message in got:
        instance, value = message.data().decode().split(":")
        by_instance.setdefault(instance, set()).add(int(value))
    assert set(by_instance) == {"0", "1"}, "both instances consumed"
    assert by_instance["0"] | by_instance["1"] == set(range(200)) and not by_instance["0"] & by_instance["1"]
    stats = wait_for(lambda: (s := functions.stats("who"))["processedSuccessfullyTotal"] == 200 and s)
    assert all(i["metrics"]["receivedTotal"] > 0 for i in stats["instances"])


def test_retain_ordering_uses_a_failover_subscription(broker, functions, code):
    package = write_package(code, "who.py", WHO)
    create_and_wait(functions, "ordered", {"className": "who.Who", "inputs": ["ord-in"], "output": "ord-out",
                                           "retainOrdering": True, "parallelism": 2}, package, instances=2)
    subscription = broker.subscription_stats("persistent://public/default/ord-in", "public/default/ordered")
    assert subscription["type"] == "Failover" and len(subscription["consumers"]) == 2


def test_retain_key_ordering_uses_a_key_shared_subscription(broker, functions, official, code):
    """Each key goes to one instance, in order; the keys spread over both instances."""
    package = write_package(code, "who.py", WHO)
    create_and_wait(functions, "keyed", {"className": "who.Who", "inputs": ["key-in"], "output": "key-out",
                                         "retainKeyOrdering": True, "parallelism": 2}, package, instances=2)
    subscription = broker.subscription_stats("persistent://public/default/key-in", "public/default/keyed")
    assert subscription["type"] == "Key_Shared" and len(subscription["consumers"]) == 2
    out = official.subscribe("key-out", "check")
    producer = official.create_producer("key-in", batching_enabled=False)
    for i in range(200):
        producer.send_async(f"k{i % 20}-{i}".encode(), None, partition_key=f"k{i % 20}")
    producer.flush()
    instances_of, order_of = {}, {}
    for message in collect(out, 200):
        instance, value = message.data().decode().split(":")
        key, index = value.split("-")
        instances_of.setdefault(key, set()).add(instance)
        order_of.setdefault(key, []).append(int(index))
    assert all(len(instances) == 1 for instances in instances_of.values()), instances_of
    assert set().union(*instances_of.values()) == {"0", "1"}, "both instances took keys"
    assert all(indexes == sorted(indexes) and len(indexes) == 10 for indexes in order_of.values()), order_of


def test_exceptions_are_retried_then_sent_to_the_dead_letter_topic(broker, functions, official, code):
    package = write_package(code, "flaky.py", FLAKY)
    create_and_wait(functions, "flaky", {"className": "flaky", "inputs": ["fl-in"], "output": "fl-out",
                                         "maxMessageRetries": 2, "deadLetterTopic": "fl-dlq"}, package)
    out, dead = official.subscribe("fl-out", "check"), official.subscribe("fl-dlq", "check")
    producer = official.create_producer("fl-in")
    for value in (b"good1", b"bad1", b"good2"):
        producer.send(value)
    assert sorted(m.data() for m in collect(out, 2)) == [b"good1!", b"good2!"]
    assert [m.data() for m in collect(dead, 1)] == [b"bad1"]
    status = wait_for(lambda: (s := functions.status("flaky"))["instances"][0]["status"]["numUserExceptions"] == 3
                      and s, "three attempts at bad1 (the first and two retries)")
    latest = status["instances"][0]["status"]["latestUserExceptions"]
    assert latest and "ValueError: cannot take bad1" in latest[-1]["exceptionString"] and latest[-1]["timestampMs"] > 0
    wait_for(lambda: broker.subscription_stats("persistent://public/default/fl-in",
                                               "public/default/flaky")["msgBacklog"] == 0)


def test_a_none_result_publishes_nothing_and_acknowledges_the_input(broker, functions, official, code):
    package = write_package(code, "skipper.py", SKIPPER)
    create_and_wait(functions, "skipper", {"className": "skipper", "inputs": ["none-in"], "output": "none-out"},
                    package)
    out = official.subscribe("none-out", "check")
    producer = official.create_producer("none-in")
    for value in (b"skip1", b"skip2", b"keep", b"skip3", b"last"):
        producer.send(value)
    # one instance sends its outputs in input order: anything published for a None comes first
    assert [m.data() for m in collect(out, 2)] == [b"keep!", b"last!"]
    wait_for(lambda: functions.stats("skipper")["processedSuccessfullyTotal"] == 5, "every input processed")
    wait_for(lambda: broker.subscription_stats("persistent://public/default/none-in",
                                               "public/default/skipper")["msgBacklog"] == 0,
             "the None results' inputs acknowledged too")
    assert broker.topic_stats("persistent://public/default/none-out")["msgInCounter"] == 2


def test_atmost_once_acknowledges_on_receipt_even_when_process_raises(broker, functions, official, code):
    package = write_package(code, "flaky.py", FLAKY)
    create_and_wait(functions, "atmost", {"className": "flaky", "inputs": ["am-in"],
                                          "processingGuarantees": "ATMOST_ONCE"}, package)
    producer = official.create_producer("am-in")
    for i in range(5):
        producer.send(f"bad{i}".encode())
    wait_for(lambda: functions.stats("atmost")["userExceptionsTotal"] == 5)
    wait_for(lambda: broker.subscription_stats("persistent://public/default/am-in",
                                               "public/default/atmost")["msgBacklog"] == 0)
    assert functions.stats("atmost")["receivedTotal"] == 5, "nothing retried"


def test_update_changes_the_code_and_the_new_code_takes_the_backlog(broker, functions, official, code):
    first = write_package(code / "v1", "slow.py", SLOW.replace("{mark}", "!"))
    second = write_package(code / "v2", "slow.py", SLOW.replace("{mark}", "?"))
    config = {"className": "slow", "inputs": ["up-in"], "output": "up-out"}
    create_and_wait(functions, "slow", config, first)
    out = official.subscribe("up-out", "check")
    producer = official.create_producer("up-in")
    for i in range(100):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    wait_for(lambda: functions.stats("slow")["processedSuccessfullyTotal"] >= 10, "v1 at work")
    answer = functions.update("slow", {"parallelism": 1}, second)
    assert answer.status_code == 204, answer.text
    assert functions.get("slow").json()["className"] == "slow"
    functions.wait_running("slow")
    got = [m.data().decode() for m in collect(out, 100, timeout=90)]
    indexes = [int(v[1:-1]) for v in got]
    assert set(indexes) == set(range(100)), "every input produced an output"
    assert any(v.endswith("!") for v in got) and any(v.endswith("?") for v in got)
    assert all(v.endswith("?") for v in got[got.index(next(v for v in got if v.endswith("?"))):]), \
        "after the update only the new code ran"
    unchanged = functions.update("slow", {})
    assert (unchanged.status_code, unchanged.json()["reason"]) == (400, "Update contains no change")
    altered = functions.update("slow", {"inputs": ["other-in"]})
    assert (altered.status_code, altered.json()["reason"]) == (400, "Input Topics cannot be altered")
    missing = functions.update("nothing", {"parallelism": 2})
    assert (missing.status_code, missing.json()["reason"]) == (400, "Function nothing doesn't exist")


def test_trigger_answers_the_output_of_the_value(functions, code):
    package = write_package(code, "flaky.py", FLAKY)
    create_and_wait(functions, "trig", {"className": "flaky", "inputs": ["tr-in"], "output": "tr-out"}, package)
    answer = functions.post("trig", "/trigger", files={"data": (None, "hello")})
    assert (answer.status_code, answer.text) == (200, "hello!")
    named = functions.post("trig", "/trigger", files={"data": (None, "x"), "topic": (None, "persistent://public/default/tr-in")})
    assert named.text == "x!"
    wrong = functions.post("trig", "/trigger", files={"data": (None, "x"), "topic": (None, "persistent://public/default/nope")})
    assert (wrong.status_code, wrong.json()["reason"]) == (400, "Function in trigger function has unidentified topic")


def test_stop_start_and_restart_instances(functions, official, code, tmp_path):
    package = write_package(code, "who.py", WHO)
    create_and_wait(functions, "ctl", {"className": "who.Who", "inputs": ["ctl-in"], "output": "ctl-out",
                                       "parallelism": 2}, package, instances=2)
    assert functions.post("ctl", "/1/stop").status_code == 204
    status = functions.wait_running("ctl", 1)
    assert [i["status"]["running"] for i in status["instances"]] == [True, False]
    assert len(instance_pids(tmp_path)) == 1
    assert functions.post("ctl", "/stop").status_code == 204
    functions.wait_running("ctl", 0)
    assert instance_pids(tmp_path) == []
    assert functions.post("ctl", "/start").status_code == 204
    functions.wait_running("ctl", 2)
    before = set(instance_pids(tmp_path))
    assert functions.post("ctl", "/0/restart").status_code == 204
    functions.wait_running("ctl", 2)
    after = set(instance_pids(tmp_path))
    assert len(after) == 2 and len(before & after) == 1, "instance 0 is a new process, instance 1 the same"
    invalid = functions.post("ctl", "/7/stop")
    assert (invalid.status_code, invalid.json()["reason"]) == (400, "Invalid Instance Id")
    out = official.subscribe("ctl-out", "check")
    official.create_producer("ctl-in").send(b"alive")
    assert collect(out, 1)[0].data().endswith(b":alive")
