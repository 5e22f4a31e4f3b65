"""Schemas of Pulsar's Python runtime beyond `string`: a function reading and writing records
with the JSON and Avro schemas (pulsar.schema.JsonSchema / AvroSchema of a Record class of its
package, named by inputTypeClassName / outputTypeClassName), and a custom Schema class of the
package, each checked with the official client producing and decoding with the same schema."""
from __future__ import annotations

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String

from tests.integration.functions.support import collect, create_and_wait, write_package

RECORDS = """
    import _pulsar
    from pulsar import Function
    from pulsar.schema import Integer, Record, Schema, String

    class Order(Record):
        item = String()
        quantity = Integer()

    class Total(Record):
        item = String()
        total = Integer()

    class Double(Function):
        def process(self, order, context):
            assert isinstance(order, Order), type(order)
            return Total(item=order.item, total=order.quantity * 2)

    class Csv(Schema):
        '''A custom schema: records as "item,number" bytes (a BYTES schema to the broker); it
        reads Orders (its record class) and writes the function's Totals.'''

        def __init__(self, record_cls):
            super().__init__(record_cls, _pulsar.SchemaType.BYTES, None, "BYTES")

        def encode(self, total):
            return ("%s,%d" % (total.item, total.total)).encode()

        def decode(self, data):
            item, quantity = data.decode().split(",")
            return self._record_cls(item=item, quantity=int(quantity))
"""


# The test's own copies of the package's records: the same names and fields, so the same schemas.
class Order(Record):
    item = String()
    quantity = Integer()


class Total(Record):
    item = String()
    total = Integer()


@pytest.mark.parametrize("kind, schema", [("json", JsonSchema), ("avro", AvroSchema)])
def test_records_in_and_out_with_a_builtin_schema(functions, official, code, kind, schema):
    package = write_package(code, "records.py", RECORDS)
    create_and_wait(functions, f"double-{kind}", {
        "className": "records.Double", "customSchemaInputs": {f"{kind}-in": kind},
        "inputTypeClassName": "records.Order", "output": f"{kind}-out", "outputSchemaType": kind,
        "outputTypeClassName": "records.Total"}, package)
    out = official.subscribe(f"{kind}-out", "check", schema=schema(Total))
    producer = official.create_producer(f"{kind}-in", schema=schema(Order))
    producer.send(Order(item="apple", quantity=3))
    producer.send(Order(item="pear", quantity=5))
    got = [m.value() for m in collect(out, 2)]
    assert [(t.item, t.total) for t in got] == [("apple", 6), ("pear", 10)]
    assert all(isinstance(t, Total) for t in got), "decoded by the official client with the output schema"


def test_a_custom_schema_class_of_the_package(functions, official, code):
    package = write_package(code, "records.py", RECORDS)
    create_and_wait(functions, "double-csv", {
        "className": "records.Double", "customSchemaInputs": {"csv-in": "records.Csv"},
        "inputTypeClassName": "records.Order", "output": "csv-out", "outputSchemaType": "records.Csv",
        "outputTypeClassName": "records.Total"}, package)
    out = official.subscribe("csv-out", "check")
    producer = official.create_producer("csv-in")
    producer.send(b"plum,4")
    assert collect(out, 1)[0].data() == b"plum,8"
