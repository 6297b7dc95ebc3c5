"""SQS dead-letter queues (docs/sqs.md "Dead-letter queues") driven by real clients,
unchanged: the AWS SDK for JavaScript and sqs-consumer (JSON protocol, tests/sqs/dlq.mjs
through sqs.mjs), Debian's boto3 and awscli (query protocol, tests/sqs/boto_dlq.py through
boto.py): a message received maxReceiveCount times, then released or expired, moves to the
dead-letter queue with its body and attributes; ListDeadLetterSourceQueues; the redrive
rules' errors."""

import json
import subprocess
import time

import test_sqs
from test_sqs import DEBIAN_PYTHON, SqsServerTest
from test_sqs_fifo import SqsScenarioTest


class SqsDlqJs(SqsScenarioTest):
    def js(self, scenario):
        self.sqs("dlq_" + scenario)

    def test_move_after_max_receives_and_sources(self):
        self.js("move")
        src = self.c.get("/jobs?queue=%s" % self.sqs_queue()).json["jobs"]
        self.assertEqual(sorted(j["error_code"] for j in src), ["dead_lettered"] * 2, src)
        self.assertEqual({j["status"] for j in src}, {"failed"}, src)

    def test_redrive_errors(self):
        self.js("errors")

    def test_sqs_consumer_failures_end_in_the_dead_letter_queue(self):
        self.js("consumer")


class SqsDlqBoto(SqsScenarioTest):
    def test_move_and_sources(self):
        p = subprocess.run([DEBIAN_PYTHON, "-c", "import boto3"], capture_output=True)
        self.assertEqual(p.returncode, 0, "python3-boto3 is missing: run scripts/deps.sh")
        self.run_scenario([DEBIAN_PYTHON, "boto.py", "dlq_move"])


class SqsDlqAwsCli(SqsServerTest):
    aws = test_sqs.SqsAwsCli.aws  # awscli as a shell script would use it
    aws_start = test_sqs.SqsAwsCli.aws_start

    def test_move_and_sources(self):
        q = self.sqs_queue()
        dlq = self.aws("create-queue", "--queue-name", q + "-dlq")["QueueUrl"]
        arn = self.aws("get-queue-attributes", "--queue-url", dlq, "--attribute-names",
                       "QueueArn")["Attributes"]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "1"})
        src = self.aws("create-queue", "--queue-name", q, "--attributes",
                       json.dumps({"RedrivePolicy": policy}))["QueueUrl"]
        self.aws("send-message", "--queue-url", src, "--message-body", "from the cli")
        got = self.aws("receive-message", "--queue-url", src, "--visibility-timeout", "1",
                       "--wait-time-seconds", "5")
        self.assertEqual(got["Messages"][0]["Body"], "from the cli")
        moved, deadline = None, time.monotonic() + 15
        while moved is None and time.monotonic() < deadline:  # expired, then swept over
            got = self.aws("receive-message", "--queue-url", dlq, "--wait-time-seconds", "1")
            moved = (got.get("Messages") or [None])[0]
        self.assertIsNotNone(moved, "the message never reached the dead-letter queue")
        self.assertEqual(moved["Body"], "from the cli")
        sources = self.aws("list-dead-letter-source-queues", "--queue-url", dlq)
        self.assertEqual(sources["queueUrls"], [src])
