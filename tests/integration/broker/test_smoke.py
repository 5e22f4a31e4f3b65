import pulsar


def test_produce_and_consume_round_trip(client, topic):
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    sent = [producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}") for i in range(10)]
    got = []
    for _ in range(10):
        msg = consumer.receive(5000)
        got.append((msg.data(), msg.properties(), msg.partition_key(), msg.message_id()))
        consumer.acknowledge(msg)
    assert [g[0] for g in got] == [f"m{i}".encode() for i in range(10)]
    assert got[3][1] == {"i": "3"} and got[3][2] == "k3"
    assert [str(g[3]) for g in got] == [str(m) for m in sent]
