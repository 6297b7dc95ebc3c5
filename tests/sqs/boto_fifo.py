"""The SQS FIFO scenarios for Debian's boto3 (the query protocol), unchanged: boto.py runs
them by name (fifo_order, ...) with its client; QUEUE is the FIFO queue's name without its
".fifo". tests/blackbox/test_sqs_fifo.py runs each scenario."""

import time


def fifo_scenarios(sqs, failure, base):
    """The scenarios over boto.py's client and failure(), by name."""
    queue = base + ".fifo"

    def fifo_url(**attrs):
        attrs["FifoQueue"] = "true"
        return sqs.create_queue(QueueName=queue, Attributes=attrs)["QueueUrl"]

    def receive_all(url, n, seconds=15):
        """Receive and delete until n messages came or seconds pass."""
        got = []
        deadline = time.monotonic() + seconds
        while len(got) < n and time.monotonic() < deadline:
            r = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                    AttributeNames=["All"])
            for m in r.get("Messages", []):
                got.append(m)
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return got

    def order():
        url = fifo_url()
        for i in range(3):
            for g in ("a", "b"):
                r = sqs.send_message(QueueUrl=url, MessageBody="%s%d" % (g, i), MessageGroupId=g,
                                     MessageDeduplicationId="%s-%d" % (g, i))
                assert len(r["SequenceNumber"]) == 20, r
        got = receive_all(url, 6)
        for g in ("a", "b"):
            bodies = [m["Body"] for m in got if m["Attributes"]["MessageGroupId"] == g]
            assert bodies == ["%s%d" % (g, i) for i in range(3)], got

    def left(url):
        """The messages url still holds, visible or not: none once a dedup's one is deleted."""
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        return (int(a["ApproximateNumberOfMessages"]) +
                int(a["ApproximateNumberOfMessagesNotVisible"]))

    def dedup():
        url = fifo_url()
        one = sqs.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g",
                               MessageDeduplicationId="d")
        two = sqs.send_message(QueueUrl=url, MessageBody="y", MessageGroupId="g",
                               MessageDeduplicationId="d")
        assert one["MessageId"] == two["MessageId"], (one, two)
        url2 = sqs.create_queue(QueueName=base + "-c.fifo",
                                Attributes={"FifoQueue": "true",
                                            "ContentBasedDeduplication": "true"})["QueueUrl"]
        a = sqs.send_message(QueueUrl=url2, MessageBody="same", MessageGroupId="g")
        b = sqs.send_message(QueueUrl=url2, MessageBody="same", MessageGroupId="g")
        assert a["MessageId"] == b["MessageId"], (a, b)
        assert [m["Body"] for m in receive_all(url, 1)] == ["x"]
        got = receive_all(url2, 1)
        assert [m["Body"] for m in got] == ["same"], got
        assert left(url) == 0 and left(url2) == 0
        assert len(got[0]["Attributes"]["MessageDeduplicationId"]) == 64, got

    def errors():
        assert failure(sqs.create_queue, QueueName=queue) == "InvalidParameterValue"
        url = fifo_url()
        assert failure(sqs.send_message, QueueUrl=url, MessageBody="x",
                       MessageDeduplicationId="d") == "MissingParameter"
        assert failure(sqs.send_message, QueueUrl=url, MessageBody="x",
                       MessageGroupId="g") == "InvalidParameterValue"
        assert failure(sqs.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g",
                       MessageDeduplicationId="d", DelaySeconds=1) == "InvalidParameterValue"

    return {"fifo_order": order, "fifo_dedup": dedup, "fifo_errors": errors}
