"""SQS FIFO queues (docs/sqs.md "FIFO queues") driven by real clients, unchanged: the AWS SDK
for JavaScript and sqs-consumer (JSON protocol, tests/sqs/fifo.mjs through sqs.mjs), Debian's
boto3 and awscli (query protocol, tests/sqs/boto_fifo.py through boto.py): send order within
a message group across receives (also after a visibility timeout passes), one message of a group in flight,
deduplication by MessageDeduplicationId and by content, and the FIFO rules' errors. On
PostgreSQL, two jobqd processes on one database keep a group's order and deduplicate across
each other, and a long poll on one is woken by a send or a native enqueue on the other."""

import json
import os
import subprocess
import threading
import time
import unittest

from harness import Client, Server, backend, free_port
import test_sqs
from test_sqs import DEBIAN_PYTHON, SCENARIO_TIMEOUT, SDK_DIR, SqsServerTest


class SqsScenarioTest(SqsServerTest):
    """Runs a client's scenario (COMMAND ENDPOINT QUEUE) in tests/sqs; it must exit 0."""

    def run_scenario(self, cmd):
        p = subprocess.run(cmd + ["http://127.0.0.1:%d" % self.sqs_port, self.sqs_queue()],
                           cwd=SDK_DIR, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=SCENARIO_TIMEOUT)
        output = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "%s failed:\n%s\n--- jobqd log ---\n%s"
                         % (" ".join(cmd), output, self.server.log_tail()))


class SqsFifoJs(SqsScenarioTest):
    def js(self, scenario):
        self.sqs("fifo_" + scenario)

    def test_order_within_group_across_receives(self):
        self.js("order")

    def test_dedup_by_id_message_is_a_job(self):
        self.js("dedup")
        jobs = self.c.get("/jobs?queue=%s.fifo" % self.sqs_queue()).json["jobs"]
        self.assertEqual(len(jobs), 1, jobs)
        self.assertEqual(jobs[0]["concurrency_key"], "fifo:%s.fifo/g" % self.sqs_queue())
        self.assertEqual(jobs[0]["dedup"]["mode"], "window", jobs[0])
        self.assertEqual(jobs[0]["dedup"]["seconds"], 300, jobs[0])

    def test_dedup_by_content(self):
        self.js("content")

    def test_fifo_errors(self):
        self.js("errors")

    def test_sqs_consumer_one_at_a_time_in_order(self):
        self.js("consumer")


class SqsFifoBoto(SqsScenarioTest):
    """Debian's boto3: the query protocol."""

    def boto(self, scenario):
        p = subprocess.run([DEBIAN_PYTHON, "-c", "import boto3"], capture_output=True)
        self.assertEqual(p.returncode, 0, "python3-boto3 is missing: run scripts/deps.sh")
        self.run_scenario([DEBIAN_PYTHON, "boto.py", "fifo_" + scenario])

    def test_order(self):
        self.boto("order")

    def test_dedup(self):
        self.boto("dedup")

    def test_errors(self):
        self.boto("errors")


class SqsFifoAwsCli(SqsServerTest):
    aws = test_sqs.SqsAwsCli.aws  # awscli as a shell script would use it
    aws_start = test_sqs.SqsAwsCli.aws_start

    def test_dedup_order_and_errors(self):
        name = self.sqs_queue() + ".fifo"
        url = self.aws("create-queue", "--queue-name", name, "--attributes",
                       "FifoQueue=true,ContentBasedDeduplication=true")["QueueUrl"]
        ids = [self.aws("send-message", "--queue-url", url, "--message-body", body,
                        "--message-group-id", "g")["MessageId"]
               for body in ("one", "two", "one")]
        self.assertEqual(ids[2], ids[0])
        self.assertNotEqual(ids[1], ids[0])
        err = self.aws("send-message", "--queue-url", url, "--message-body", "x", ok=False)
        self.assertIn("MissingParameter", err)
        bodies = []
        deadline = time.monotonic() + 15
        while len(bodies) < 2 and time.monotonic() < deadline:
            got = self.aws("receive-message", "--queue-url", url, "--max-number-of-messages",
                           "10", "--attribute-names", "All", "--wait-time-seconds", "1")
            for m in got.get("Messages", []):
                self.assertEqual(m["Attributes"]["MessageGroupId"], "g")
                bodies.append(m["Body"])
                self.aws("delete-message", "--queue-url", url, "--receipt-handle",
                         m["ReceiptHandle"])
        self.assertEqual(bodies, ["one", "two"])


@unittest.skipUnless(backend() == "pg", "several processes share a database on PostgreSQL")
class SqsProcesses(unittest.TestCase):
    """Two jobqd processes on one PostgreSQL database: a group's order and the deduplication
    hold across them, and a long poll on one is woken by a send (or a native enqueue) on the
    other as a native claim is (its NOTIFY), not at the end of its wait."""

    @classmethod
    def setUpClass(cls):
        cls.servers, cls.ports = [], []
        try:
            for i in range(2):
                port = free_port()
                srv = Server(["--sweep-interval", "1", "--sqs-listen", "127.0.0.1:%d" % port],
                             db=cls.servers[0].db if cls.servers else None)
                cls.servers.append(srv)
                srv.start()
                cls.ports.append(port)
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for srv in reversed(cls.servers):
            srv.cleanup()

    def setUp(self):
        self.clients = [Client(p, timeout=30) for p in self.ports]
        for c in self.clients:
            self.addCleanup(c.close)

    def call(self, i, action, body):
        r = self.clients[i].request("POST", "/", raw=json.dumps(body).encode(), headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS." + action})
        self.assertEqual(r.status, 200, r)
        return r.json

    def long_poll_woken_by(self, url, make):
        """A ReceiveMessage waiting 10 s on process 0 while make() runs on process 1 after
        0.3 s: the message comes within a second of make(), as a native claim's would (a
        parked poll also looks again by itself every 1-2 s on a shared store: waitq.h; this
        bound catches a wake that never came but for that). Returns the message."""
        box = {}

        def poll():
            box["r"] = self.call(0, "ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 10})
            box["t"] = time.monotonic()
        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)  # the poll parks first (a send before it would be found by its look)
        make()
        made = time.monotonic()
        t.join(15)
        self.assertFalse(t.is_alive(), "the long poll never answered")
        self.assertEqual(len(box["r"].get("Messages", [])), 1, box["r"])
        self.assertLess(box["t"] - made, 1.0, "woken %.2f s after the message was made"
                        % (box["t"] - made))
        m = box["r"]["Messages"][0]
        self.call(0, "DeleteMessage", {"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"]})
        return m

    def test_long_poll_woken_across_processes(self):
        q = "wake-%d" % os.getpid()
        url = self.call(0, "CreateQueue", {"QueueName": q})["QueueUrl"]
        m = self.long_poll_woken_by(url, lambda: self.call(1, "SendMessage", {
            "QueueUrl": url, "MessageBody": "through b"}))
        self.assertEqual(m["Body"], "through b")

        def native():
            c = self.servers[1].client()
            self.addCleanup(c.close)
            r = c.post("/jobs", {"queue": q, "payload": {"native": True}})
            self.assertEqual(r.status, 201, r)
        m = self.long_poll_woken_by(url, native)
        self.assertEqual(json.loads(m["Body"]), {"native": True})

    def test_order_and_dedup_across_processes(self):
        q = "procs-%d.fifo" % os.getpid()
        url = self.call(0, "CreateQueue", {"QueueName": q,
                                           "Attributes": {"FifoQueue": "true"}})["QueueUrl"]
        sent = []
        for i in range(6):  # alternately through each process
            r = self.call(i % 2, "SendMessage", {"QueueUrl": url, "MessageBody": "m%d" % i,
                                                 "MessageGroupId": "g",
                                                 "MessageDeduplicationId": "d%d" % i})
            sent.append(r["MessageId"])
        again = self.call(1, "SendMessage", {"QueueUrl": url, "MessageBody": "other",
                                             "MessageGroupId": "g",
                                             "MessageDeduplicationId": "d0"})
        self.assertEqual(again["MessageId"], sent[0])
        got = []
        deadline = time.monotonic() + 20
        n = 0
        while len(got) < 6 and time.monotonic() < deadline:
            receive = {"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0}
            both = [self.call(k, "ReceiveMessage", receive) for k in (n % 2, 1 - n % 2)]
            n += 1
            msgs = [m for r in both for m in r.get("Messages", [])]
            self.assertLessEqual(len(msgs), 1, "two of one group in flight: %s" % msgs)
            for m in msgs:
                got.append(m["Body"])
                self.call(n % 2, "DeleteMessage", {"QueueUrl": url,
                                                   "ReceiptHandle": m["ReceiptHandle"]})
        self.assertEqual(got, ["m%d" % i for i in range(6)])
