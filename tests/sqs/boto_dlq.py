"""The SQS dead-letter queue scenarios for Debian's boto3 (the query protocol), unchanged:
boto.py runs them by name (dlq_move, ...) with its client. tests/blackbox/test_sqs_dlq.py
runs each scenario."""

import json


def dlq_scenarios(sqs, failure, receive_one, queue):
    """The scenarios over boto.py's client, failure() and receive_one(), by name."""

    def dlq_move():
        dlq = sqs.create_queue(QueueName=queue + "-dlq")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
        policy = json.dumps({"deadLetterTargetArn": arn["Attributes"]["QueueArn"],
                             "maxReceiveCount": "1"})
        src = sqs.create_queue(QueueName=queue,
                               Attributes={"RedrivePolicy": policy})["QueueUrl"]
        sqs.send_message(QueueUrl=src, MessageBody="poison <&>",
                         MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
        m = receive_one(src, MessageAttributeNames=["All"])
        sqs.change_message_visibility(QueueUrl=src, ReceiptHandle=m["ReceiptHandle"],
                                      VisibilityTimeout=0)
        moved = receive_one(dlq, MessageAttributeNames=["All"])
        assert moved["Body"] == "poison <&>", moved
        assert moved["MessageAttributes"]["k"]["StringValue"] == "v", moved
        assert moved["MD5OfMessageAttributes"] == m["MD5OfMessageAttributes"], (moved, m)
        r = sqs.list_dead_letter_source_queues(QueueUrl=dlq)
        assert r["queueUrls"] == [src], r
        r = sqs.list_dead_letter_source_queues(QueueUrl=src)
        assert r.get("queueUrls", []) == [], r
        bad = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:nope",
                          "maxReceiveCount": 1})
        assert failure(sqs.set_queue_attributes, QueueUrl=src,
                       Attributes={"RedrivePolicy": bad}) == "InvalidParameterValue"

    return {"dlq_move": dlq_move}
