"""SigV4 against jobqd's SQS listener with Debian's boto3 (the query protocol). Usage:
/usr/bin/python3 auth_boto.py ENDPOINT QUEUE; the keys come from the environment as ID:SECRET
in JOBQ_SQS_ADMIN, JOBQ_SQS_PRODUCER and JOBQ_SQS_WORKER. Exits 0 when every check holds:
the right keys work, a wrong secret is SignatureDoesNotMatch, an unknown key
InvalidClientTokenId, a producer's ReceiveMessage AccessDenied.
tests/blackbox/test_sqs_auth.py runs it."""

import os
import sys

import boto3
import botocore

endpoint, queue = sys.argv[1:3]


def client(pair):
    key, secret = pair.split(":", 1)
    return boto3.client("sqs", endpoint_url=endpoint, region_name="ap-south-1",
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        config=botocore.config.Config(retries={"max_attempts": 1}))


def failure(call, **kw):
    """The error code and HTTP status a call fails with (it must fail)."""
    try:
        call(**kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("%s succeeded" % call.__name__)


admin = client(os.environ["JOBQ_SQS_ADMIN"])
producer = client(os.environ["JOBQ_SQS_PRODUCER"])
worker = client(os.environ["JOBQ_SQS_WORKER"])
admin_id = os.environ["JOBQ_SQS_ADMIN"].split(":")[0]
try:
    url = admin.create_queue(QueueName=queue)["QueueUrl"]
    sent = producer.send_message(QueueUrl=url, MessageBody="signed & <sent>")
    got = worker.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"][0]
    assert got["MessageId"] == sent["MessageId"], got
    worker.delete_message(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"])
    r = failure(client(admin_id + ":not-the-secret").list_queues)
    assert r == ("SignatureDoesNotMatch", 403), r
    r = failure(client("AKIDUNKNOWN:whatever").list_queues)
    assert r == ("InvalidClientTokenId", 403), r
    r = failure(producer.receive_message, QueueUrl=url)
    assert r == ("AccessDenied", 403), r
    r = failure(worker.delete_queue, QueueUrl=url)
    assert r == ("AccessDenied", 403), r
except Exception:  # a check failed: say why
    import traceback
    traceback.print_exc()
    sys.exit(1)
