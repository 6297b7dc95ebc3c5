"""The SQS front end (--sqs-listen, docs/sqs.md) driven by real clients, unchanged: the AWS
SDK for JavaScript v3 (@aws-sdk/client-sqs, pinned in tests/sqs, which checks every MD5 it is
given: the JSON protocol) and sqs-consumer on top of it, Debian's python3-boto3 and awscli (the query protocol: forms and
XML). Each scenario of tests/sqs/sqs.mjs and tests/sqs/boto.py runs against one server per
module (sqs.mjs in one node per module): send and receive with message attributes and
digests, long poll, visibility extension and expiry, the stale receipt handle of a message
received again since (fencing; also an sqs-consumer's), batches with partial failure,
queue attributes, list and purge, AWS's errors; and the model shared with the native API (a
job enqueued natively is received through SQS, a message sent through SQS is a job). node,
tests/sqs/node_modules, python3-boto3 (for /usr/bin/python3) and awscli come from
scripts/deps.sh; the tests fail, naming it, when one is missing."""

import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import Client, ServerTest, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_DIR = os.path.join(HERE, "..", "sqs")
SCENARIO_TIMEOUT = 120
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's, with python3-boto3 (not a virtualenv's)


_module_servers = {}  # test module -> (Server, its SQS port): one jobqd per module


def _stop_module_server(module):
    srv = _module_servers.pop(module)[0]
    try:
        srv.stop_checked()
    finally:
        srv.cleanup()


_module_nodes = {}  # test module -> (its `node sqs.mjs serve`, the file of its stderr)


def _stop_module_node(module):
    p, err = _module_nodes.pop(module)
    p.stdin.close()  # node ends at the end of its input
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    p.stdout.close()
    err.close()


class SqsServerTest(ServerTest):
    """One jobqd per test module with an SQS listener on a port of its own, shared by the
    module's classes (each test uses queues of its own) and stopped, checked, when the
    module's tests end."""

    @classmethod
    def setUpClass(cls):
        if cls.__module__ not in _module_servers:
            cls.sqs_port = free_port()
            # --backoff-base 0: a message whose visibility timeout passed is visible again at
            # the sweeper's next pass (each second), as on AWS, not after a retry delay too:
            # the expiries these tests wait for take a second or two of real time, not four.
            cls.server_args = ("--sweep-interval", "1", "--backoff-base", "0",
                               "--sqs-listen", "127.0.0.1:%d" % cls.sqs_port)
            super().setUpClass()
            _module_servers[cls.__module__] = (cls.server, cls.sqs_port)
            unittest.addModuleCleanup(_stop_module_server, cls.__module__)
        cls.server, cls.sqs_port = _module_servers[cls.__module__]

    @classmethod
    def tearDownClass(cls):
        pass  # the module's server stops when the module's tests end

    def node(self):
        """The module's `node sqs.mjs serve` against its server (started on first use,
        stopped when the module's tests end): one start of node and the SDK per module."""
        if self.__module__ not in _module_nodes:
            node = shutil.which("node")
            self.assertIsNotNone(node, "node is missing: run scripts/deps.sh")
            self.assertTrue(os.path.isfile(os.path.join(SDK_DIR, "node_modules", "@aws-sdk",
                                                        "client-sqs", "package.json")),
                            "tests/sqs/node_modules is missing: run scripts/deps.sh")
            err = tempfile.TemporaryFile()
            p = subprocess.Popen([node, "sqs.mjs", "serve", "http://127.0.0.1:%d" % self.sqs_port],
                                 cwd=SDK_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=err, bufsize=0)
            _module_nodes[self.__module__] = (p, err)
            unittest.addModuleCleanup(_stop_module_node, self.__module__)
        return _module_nodes[self.__module__]

    def sqs(self, scenario, queue=None):
        """Runs scenario of tests/sqs/sqs.mjs on queue (the test's); it must hold."""
        p, err = self.node()
        p.stdin.write(("%s %s\n" % (scenario, queue or self.sqs_queue())).encode())
        deadline = time.monotonic() + SCENARIO_TIMEOUT
        answer = None
        while answer is None:
            ready = select.select([p.stdout], [], [], max(0, deadline - time.monotonic()))[0]
            line = p.stdout.readline() if ready else b""
            if not line:
                err.seek(0)
                self.fail("sqs.mjs %s: no answer (%s)\n%s\n--- jobqd log ---\n%s"
                          % (scenario, "timed out" if not ready else "node exited",
                             err.read().decode("utf-8", "replace")[-4000:],
                             self.server.log_tail()))
            if line.startswith(b'{"ok"'):
                answer = json.loads(line)
        self.assertTrue(answer["ok"], "%s\n--- jobqd log ---\n%s"
                        % (answer.get("error"), self.server.log_tail()))

    def sqs_queue(self):
        """The test's queue as an SQS name (no '.')."""
        return self.q.replace(".", "-")


class SqsJsClient(SqsServerTest):
    def test_send_receive_attributes_md5(self):
        self.sqs("basic")

    def test_long_poll(self):
        self.sqs("longpoll")

    def test_visibility_extension_and_expiry(self):
        self.sqs("visibility")

    def test_stale_receipt_handle_refused(self):
        self.sqs("stale")

    def test_batches_partial_failure(self):
        self.sqs("batches")

    def test_queue_attributes_list_purge(self):
        self.sqs("queues")

    def test_queue_attributes_stored(self):
        self.sqs("attributes")

    def test_errors(self):
        self.sqs("errors")

    def test_sqs_consumer_heartbeat_release_delete(self):
        self.sqs("consumer")

    def test_sqs_consumer_stale_receipt_handle_refused(self):
        self.sqs("consumer_stale")

    def test_native_job_received_through_sqs(self):
        q = self.sqs_queue()
        self.enqueue(queue=q)
        self.sqs("native", q)  # CreateQueue of an existing jobq queue, then a receive
        r = self.c.get("/jobs?queue=%s" % q)
        self.assertEqual([j["status"] for j in r.json["jobs"]], ["succeeded"], r)

    def test_sqs_message_is_a_job(self):
        q = self.sqs_queue()
        self.sqs("sendone", q)
        r = self.c.get("/jobs?queue=%s" % q)
        self.assertEqual(len(r.json["jobs"]), 1, r)
        self.assertEqual(r.json["jobs"][0]["payload"], {"sqs": {"body": "from sqs"}})


class SqsBoto(SqsServerTest):
    """Debian's boto3: the query protocol."""

    def boto(self, scenario):
        p = subprocess.run([DEBIAN_PYTHON, "-c", "import boto3"], capture_output=True)
        self.assertEqual(p.returncode, 0, "python3-boto3 is missing: run scripts/deps.sh")
        p = subprocess.run([DEBIAN_PYTHON, "boto.py", scenario,
                            "http://127.0.0.1:%d" % self.sqs_port, self.sqs_queue()],
                           cwd=SDK_DIR, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=SCENARIO_TIMEOUT)
        output = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "boto.py %s failed:\n%s\n--- jobqd log ---\n%s"
                         % (scenario, output, self.server.log_tail()))

    def test_send_receive_attributes_md5(self):
        self.boto("basic")

    def test_long_poll(self):
        self.boto("longpoll")

    def test_visibility_extension_and_expiry(self):
        self.boto("visibility")

    def test_stale_receipt_handle_refused(self):
        self.boto("stale")

    def test_batches_partial_failure(self):
        self.boto("batches")

    def test_queues(self):
        self.boto("queues")

    def test_errors(self):
        self.boto("errors")


class SqsAwsCli(SqsServerTest):
    """Debian's awscli, as a shell script would use it."""

    def aws_start(self, *args):
        """`aws sqs ARGS` started against this server: a subprocess.Popen (stdout, stderr
        piped)."""
        exe = shutil.which("aws")
        self.assertIsNotNone(exe, "awscli is missing: run scripts/deps.sh")
        env = dict(os.environ, AWS_ACCESS_KEY_ID="jobq", AWS_SECRET_ACCESS_KEY="jobq",
                   AWS_DEFAULT_REGION="us-east-1", AWS_PAGER="", AWS_MAX_ATTEMPTS="1",
                   HOME=tempfile.gettempdir())
        return subprocess.Popen([exe, "--endpoint-url", "http://127.0.0.1:%d" % self.sqs_port,
                                 "--output", "json", "sqs"] + list(args),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)

    def aws(self, *args, ok=True, proc=None):
        """Runs `aws sqs ARGS` (or waits for proc, aws_start's) and returns its JSON output
        (ok: it must succeed) or its stderr (ok=False: it must fail)."""
        p = proc or self.aws_start(*args)
        try:
            out, err = p.communicate(timeout=SCENARIO_TIMEOUT)
        finally:
            p.kill()
        out, err = out.decode(), err.decode()
        if ok:
            self.assertEqual(p.returncode, 0, "aws sqs %s: %s" % (" ".join(args), err))
            return json.loads(out) if out.strip() else {}
        self.assertNotEqual(p.returncode, 0, out)
        return err

    def test_send_receive_delete_and_stale_handle(self):
        url = self.aws("create-queue", "--queue-name", self.sqs_queue())["QueueUrl"]
        sent = self.aws("send-message", "--queue-url", url, "--message-body", "from the cli")
        first = self.aws("receive-message", "--queue-url", url, "--visibility-timeout", "1",
                         "--wait-time-seconds", "5")["Messages"][0]
        self.assertEqual(first["Body"], "from the cli")
        self.assertEqual(first["MessageId"], sent["MessageId"])
        deadline = time.monotonic() + 15
        second = None
        while second is None and time.monotonic() < deadline:
            got = self.aws("receive-message", "--queue-url", url, "--wait-time-seconds", "1")
            second = (got.get("Messages") or [None])[0]
        self.assertIsNotNone(second, "the message never came back")
        err = self.aws("delete-message", "--queue-url", url, "--receipt-handle",
                       first["ReceiptHandle"], ok=False)
        self.assertIn("ReceiptHandleIsInvalid", err)
        self.aws("delete-message", "--queue-url", url, "--receipt-handle",
                 second["ReceiptHandle"])
        attrs = self.aws("get-queue-attributes", "--queue-url", url, "--attribute-names", "All")
        self.assertEqual(attrs["Attributes"]["ApproximateNumberOfMessages"], "0")
        self.assertEqual(attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"], "0")

    def test_errors(self):
        err = self.aws("get-queue-url", "--queue-name", "never-made-" + self.sqs_queue(),
                       ok=False)
        self.assertIn("NonExistentQueue", err)

    def test_attributes_visibility_batches_purge_long_poll(self):
        url = self.aws("create-queue", "--queue-name", self.sqs_queue())["QueueUrl"]
        attrs = {"color": {"DataType": "String", "StringValue": "blue"},
                 "n": {"DataType": "Number", "StringValue": "7"}}
        sent = self.aws("send-message", "--queue-url", url, "--message-body", "a",
                        "--message-attributes", json.dumps(attrs))
        self.assertEqual(sent["MD5OfMessageBody"], hashlib.md5(b"a").hexdigest())
        m = self.aws("receive-message", "--queue-url", url, "--visibility-timeout", "20",
                     "--message-attribute-names", "All", "--attribute-names", "All",
                     "--wait-time-seconds", "1")["Messages"][0]
        self.assertEqual(m["MD5OfBody"], sent["MD5OfMessageBody"])
        self.assertEqual(m["MD5OfMessageAttributes"], sent["MD5OfMessageAttributes"])
        self.assertEqual(m["MessageAttributes"], attrs)
        self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "1")
        # Extended: the job's lease (the message's visibility) now ends 60 s from now, not
        # 20 s from the receive (waiting it out is test_sqs.py's JS and boto3 scenarios').
        self.aws("change-message-visibility", "--queue-url", url, "--receipt-handle",
                 m["ReceiptHandle"], "--visibility-timeout", "60")
        job = self.c.get("/jobs?queue=%s" % self.sqs_queue()).json["jobs"][0]
        self.assertGreater(job["lease_expires_at"] - time.time(), 40, job)
        self.assertNotIn("Messages", self.aws("receive-message", "--queue-url", url))
        # A batch with a failing entry: the other is sent.
        r = self.aws("send-message-batch", "--queue-url", url, "--entries", json.dumps([
            {"Id": "ok", "MessageBody": "b"},
            {"Id": "bad", "MessageBody": "c", "DelaySeconds": 901}]))
        self.assertEqual([e["Id"] for e in r["Successful"]], ["ok"], r)
        self.assertEqual([(e["Id"], e["Code"]) for e in r["Failed"]],
                         [("bad", "InvalidParameterValue")], r)
        # Purge drops the queued "b", not "a" in flight.
        self.aws("purge-queue", "--queue-url", url)
        a = self.aws("get-queue-attributes", "--queue-url", url, "--attribute-names",
                     "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        self.assertEqual(a["Attributes"], {"ApproximateNumberOfMessages": "0",
                                           "ApproximateNumberOfMessagesNotVisible": "1"})
        listed = self.aws("list-queues", "--queue-name-prefix", self.sqs_queue())
        self.assertEqual(listed["QueueUrls"], [url])
        r = self.aws("delete-message-batch", "--queue-url", url, "--entries", json.dumps([
            {"Id": "ok", "ReceiptHandle": m["ReceiptHandle"]},
            {"Id": "bad", "ReceiptHandle": "nope"}]))
        self.assertEqual([e["Id"] for e in r["Successful"]], ["ok"], r)
        self.assertEqual([(e["Id"], e["Code"]) for e in r["Failed"]],
                         [("bad", "ReceiptHandleIsInvalid")], r)
        err = self.aws("receive-message", "--queue-url", url, "--max-number-of-messages", "11",
                       ok=False)
        self.assertIn("InvalidParameterValue", err)
        # A long poll answers with a message sent while it waits, long before its 10 s.
        t0 = time.monotonic()
        poll = self.aws_start("receive-message", "--queue-url", url, "--wait-time-seconds", "10")
        self.aws("send-message", "--queue-url", url, "--message-body", "late")
        got = self.aws(proc=poll)
        self.assertEqual(got["Messages"][0]["Body"], "late")
        self.assertLess(time.monotonic() - t0, 8)


class SqsWire(SqsServerTest):
    """What no SDK sends: the wire format's errors, checked field by field."""

    def post(self, target, body, ctype="application/x-amz-json-1.0"):
        c = Client(self.sqs_port)
        self.addCleanup(c.close)
        hdrs = {"Content-Type": ctype}
        if target:
            hdrs["X-Amz-Target"] = target
        return c.request("POST", "/", raw=body if isinstance(body, bytes) else body.encode(),
                         headers=hdrs)

    def assert_sqs_error(self, r, status, type_, query):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("Content-Type"), "application/x-amz-json-1.0", r)
        self.assertEqual(r.header("x-amzn-query-error"), query, r)
        self.assertEqual(r.json["__type"], "com.amazonaws.sqs#" + type_, r)
        self.assertIsInstance(r.json["message"], str, r)

    def test_malformed_json(self):
        r = self.post("AmazonSQS.SendMessage", "{not json")
        self.assert_sqs_error(r, 400, "SerializationException", "SerializationException;Sender")

    def test_nul_and_bad_utf8_refused(self):
        q = self.sqs_queue()
        r = self.post("AmazonSQS.CreateQueue", '{"QueueName":"%s"}' % q)
        url = r.json["QueueUrl"]
        r = self.post("AmazonSQS.SendMessage",
                      '{"QueueUrl":"%s","MessageBody":"a\\u0000b"}' % url)
        self.assert_sqs_error(r, 400, "InvalidMessageContents", "InvalidMessageContents;Sender")
        r = self.post("AmazonSQS.SendMessage",
                      b'{"QueueUrl":"' + url.encode() + b'","MessageBody":"\xff"}')
        self.assert_sqs_error(r, 400, "SerializationException", "SerializationException;Sender")
        self.assertEqual(self.c.get("/jobs?queue=%s" % q).json["jobs"], [])

    def test_unknown_action(self):
        r = self.post("AmazonSQS.FlyToTheMoon", "{}")
        self.assert_sqs_error(r, 400, "InvalidAction", "InvalidAction;Sender")

    def test_over_long_body_nothing_lost(self):
        q = self.sqs_queue()
        body = '{"QueueUrl":"http://x/000000000000/%s","MessageBody":"%s"}' % (q, "y" * 1100000)
        r = self.post("AmazonSQS.SendMessage", body)
        self.assert_sqs_error(r, 413, "RequestEntityTooLarge", "RequestEntityTooLarge;Sender")
        self.assertEqual(self.c.get("/jobs?queue=%s" % q).json["jobs"], [])

    def test_bad_receipt_handle(self):
        r = self.post("AmazonSQS.CreateQueue", '{"QueueName":"%s"}' % self.sqs_queue())
        self.assertEqual(r.status, 200, r)
        r = self.post("AmazonSQS.DeleteMessage",
                      '{"QueueUrl":"%s","ReceiptHandle":"1.short"}' % r.json["QueueUrl"])
        self.assert_sqs_error(r, 400, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid;Sender")

    def test_unknown_queue(self):
        r = self.post("AmazonSQS.SendMessage",
                      '{"QueueUrl":"http://x/000000000000/never-made","MessageBody":"x"}')
        self.assert_sqs_error(r, 400, "QueueDoesNotExist",
                              "AWS.SimpleQueueService.NonExistentQueue;Sender")

    def test_query_protocol_error_is_xml(self):
        r = self.post(None, b"Action=GetQueueUrl&QueueName=never-made&Version=2012-11-05",
                      ctype="application/x-www-form-urlencoded")
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.header("Content-Type"), "text/xml", r)
        self.assertEqual(r.header("x-amzn-query-error"),
                         "AWS.SimpleQueueService.NonExistentQueue;Sender", r)
        self.assertIn(b"<Code>AWS.SimpleQueueService.NonExistentQueue</Code>", r.body)

    def test_malformed_form(self):
        r = self.post(None, b"Action=SendMessage&QueueUrl=%zz",
                      ctype="application/x-www-form-urlencoded")
        self.assertEqual(r.status, 400, r)
        self.assertIn(b"<Code>SerializationException</Code>", r.body)

    def test_queue_change_seen_by_the_next_message_at_once(self):
        # The message actions use a copy of the queue's row (api/sqs_cache.h): this process's
        # SetQueueAttributes and DeleteQueue drop it, so the next send sees the change.
        r = self.post("AmazonSQS.CreateQueue", '{"QueueName":"%s"}' % self.sqs_queue())
        url = r.json["QueueUrl"]
        send = '{"QueueUrl":"%s","MessageBody":"%s"}'
        self.assertEqual(self.post("AmazonSQS.SendMessage", send % (url, "x" * 1500)).status, 200)
        r = self.post("AmazonSQS.SetQueueAttributes",
                      '{"QueueUrl":"%s","Attributes":{"MaximumMessageSize":"1024"}}' % url)
        self.assertEqual(r.status, 200, r)
        r = self.post("AmazonSQS.SendMessage", send % (url, "x" * 1500))
        self.assert_sqs_error(r, 400, "InvalidParameterValue", "InvalidParameterValue;Sender")
        self.assertEqual(self.post("AmazonSQS.DeleteQueue", '{"QueueUrl":"%s"}' % url).status, 200)
        r = self.post("AmazonSQS.SendMessage", send % (url, "x"))
        self.assert_sqs_error(r, 400, "QueueDoesNotExist",
                              "AWS.SimpleQueueService.NonExistentQueue;Sender")

    def test_missing_queue_url(self):
        r = self.post("AmazonSQS.SendMessage", '{"MessageBody":"x"}')
        self.assert_sqs_error(r, 400, "MissingParameter", "MissingParameter;Sender")
