"""Drives jobqd's SQS listener with Debian's boto3 (python3-boto3: the query protocol,
form-encoded with XML answers), unchanged. Usage: /usr/bin/python3 boto.py SCENARIO ENDPOINT
QUEUE; exits 0 when the scenario holds, else prints why and exits 1.
tests/blackbox/test_sqs.py runs each scenario."""

import sys
import time

import boto3
import botocore

import boto_dlq
import boto_fifo

scenario, endpoint, queue = sys.argv[1:4]
sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="jobq", aws_secret_access_key="jobq",
                   config=botocore.config.Config(retries={"max_attempts": 1}))


def failure(call, **kw):
    """The error code a call fails with (it must fail)."""
    try:
        call(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("%s succeeded" % call.__name__)


def receive_one(url, seconds=15, **kw):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1, **kw)
        if r.get("Messages"):
            return r["Messages"][0]
    raise AssertionError("no message in %d s" % seconds)


def basic():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    assert sqs.get_queue_url(QueueName=queue)["QueueUrl"] == url
    attrs = {"color": {"DataType": "String", "StringValue": "blue & <green>"},
             "raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"}}
    body = "hello \u00e9\u4e16 <&> \U0001f600"
    sent = sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attrs)
    m = receive_one(url, MessageAttributeNames=["All"], AttributeNames=["All"])
    assert m["Body"] == body, m
    assert m["MessageId"] == sent["MessageId"]
    assert m["MD5OfBody"] == sent["MD5OfMessageBody"]
    assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert m["MessageAttributes"]["raw"]["BinaryValue"] == b"\x00\x01\xff"
    assert m["MessageAttributes"]["color"]["StringValue"] == "blue & <green>"
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def longpoll():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    t0 = time.monotonic()
    r = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert "Messages" not in r and time.monotonic() - t0 >= 0.9
    sqs.send_message(QueueUrl=url, MessageBody="now")
    t0 = time.monotonic()
    r = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10)
    assert r["Messages"][0]["Body"] == "now" and time.monotonic() - t0 < 5


def visibility():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="v")
    m = receive_one(url, VisibilityTimeout=1)
    # Extended past its first second: still hidden after it (and the sweeper's pass).
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                  VisibilityTimeout=30)
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)
    # Shortened: visible again by itself once it passes.
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                  VisibilityTimeout=1)
    back = receive_one(url, AttributeNames=["ApproximateReceiveCount"])
    assert back["Attributes"]["ApproximateReceiveCount"] == "2", back
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=back["ReceiptHandle"],
                                  VisibilityTimeout=0)
    again = receive_one(url, seconds=3)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])


def stale():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="fenced")
    first = receive_one(url, VisibilityTimeout=1)
    second = receive_one(url, VisibilityTimeout=30)
    assert first["MessageId"] == second["MessageId"]
    code = failure(sqs.delete_message, QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    assert code == "ReceiptHandleIsInvalid", code
    code = failure(sqs.change_message_visibility, QueueUrl=url,
                   ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=60)
    assert code == "AWS.SimpleQueueService.MessageNotInflight", code
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])


def batches():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    r = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "a", "MessageBody": "1"},
        {"Id": "b", "MessageBody": "2", "DelaySeconds": 901},
        {"Id": "c", "MessageBody": "3",
         "MessageAttributes": {"k": {"DataType": "Number", "StringValue": "7"}}}])
    assert sorted(e["Id"] for e in r["Successful"]) == ["a", "c"], r
    assert [(e["Id"], e["Code"], e["SenderFault"]) for e in r["Failed"]] == \
        [("b", "InvalidParameterValue", True)], r
    code = failure(sqs.send_message_batch, QueueUrl=url,
                   Entries=[{"Id": "m%d" % i, "MessageBody": "x"} for i in range(11)])
    assert code == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", code
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert len(got["Messages"]) == 2, got
    d = sqs.delete_message_batch(QueueUrl=url, Entries=[
        {"Id": "ok", "ReceiptHandle": got["Messages"][0]["ReceiptHandle"]},
        {"Id": "bad", "ReceiptHandle": "nope"}])
    assert [e["Id"] for e in d["Successful"]] == ["ok"]
    assert d["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"
    c = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "rel", "ReceiptHandle": got["Messages"][1]["ReceiptHandle"],
         "VisibilityTimeout": 0}])
    assert [e["Id"] for e in c["Successful"]] == ["rel"]


def queues():
    url = sqs.create_queue(QueueName=queue, Attributes={"VisibilityTimeout": "9"})["QueueUrl"]
    code = failure(sqs.create_queue, QueueName=queue, Attributes={"VisibilityTimeout": "10"})
    assert code == "QueueAlreadyExists", code
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "1"})
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert a["VisibilityTimeout"] == "9" and a["DelaySeconds"] == "1", a
    sqs.send_message(QueueUrl=url, MessageBody="x")
    a = sqs.get_queue_attributes(QueueUrl=url,
                                 AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert a == {"ApproximateNumberOfMessages": "1"}, a
    assert sqs.list_queues(QueueNamePrefix=queue)["QueueUrls"] == [url]
    sqs.purge_queue(QueueUrl=url)
    a = sqs.get_queue_attributes(QueueUrl=url,
                                 AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert a == {"ApproximateNumberOfMessages": "0"}, a
    sqs.delete_queue(QueueUrl=url)
    code = failure(sqs.get_queue_url, QueueName=queue)
    assert code == "AWS.SimpleQueueService.NonExistentQueue", code


def errors():
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    assert failure(sqs.delete_message, QueueUrl=url, ReceiptHandle="x") == \
        "ReceiptHandleIsInvalid"
    assert failure(sqs.receive_message, QueueUrl=url, MaxNumberOfMessages=11) == \
        "InvalidParameterValue"
    assert failure(sqs.send_message, QueueUrl=url, MessageBody="a\x01b") == \
        "InvalidMessageContents"
    assert failure(sqs.list_queue_tags, QueueUrl=url) == \
        "AWS.SimpleQueueService.UnsupportedOperation"
    assert failure(sqs.get_queue_attributes, QueueUrl=url, AttributeNames=["Nope"]) == \
        "InvalidAttributeName"


globals().update(boto_fifo.fifo_scenarios(sqs, failure, queue),
                 **boto_dlq.dlq_scenarios(sqs, failure, receive_one, queue))

try:
    globals()[scenario]()
except Exception as e:  # the scenario failed: say why
    import traceback
    traceback.print_exc()
    sys.exit(1)
