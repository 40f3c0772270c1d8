"""librdkafka's transactional producer against disgw, through confluent-kafka.

Commits one transaction and aborts another over two partitions of a new
topic, then reads the topic from the start with isolation.level
read_committed and checks that exactly the committed records come back.
librdkafka runs transaction version 1 (AddPartitionsToTxn, EndTxn keeping
the epoch). Prints "librdkafka transactions ok" on success; any mismatch
exits non-zero with a message.
"""

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def main(bootstrap: str) -> None:
    topic = "librdkafka-txn"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)]).values():
        fut.result(30)

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "librdkafka-txn-1"})
    producer.init_transactions(30)
    for prefix, commit in (("kept", True), ("dropped", False), ("also-kept", True)):
        producer.begin_transaction()
        for i in range(6):
            producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=i % 2)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "librdkafka-txn-reader",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    consumer.subscribe([topic])
    got = []
    deadline, quiet_until = time.time() + 30, None
    while time.time() < deadline and (quiet_until is None or time.time() < quiet_until):
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        got.append(msg.value().decode())
        if len(got) >= 12 and quiet_until is None:
            quiet_until = time.time() + 1
    consumer.close()
    want = sorted([f"kept-{i}" for i in range(6)] + [f"also-kept-{i}" for i in range(6)])
    if sorted(got) != want:
        print(f"FAIL: read_committed read {sorted(got)}, want {want}", file=sys.stderr)
        sys.exit(1)
    print("librdkafka transactions ok")


if __name__ == "__main__":
    main(sys.argv[1])
