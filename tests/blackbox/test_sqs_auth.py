"""SigV4 on the SQS listener (docs/sqs.md "Authentication"): with --auth-token-file, access keys
from the token file (KEY:SECRET:ROLE lines) and --sqs-key, mapped to jobq's roles. Real clients,
unchanged: @aws-sdk/client-sqs (JSON protocol), Debian's boto3 and awscli (query protocol):
the right key works, a wrong secret is SignatureDoesNotMatch, an unknown key
InvalidClientTokenId, a producer key's ReceiveMessage AccessDenied. On the wire, signed here with
the standard library: a missing or malformed Authorization header, a date 20 minutes off, a
body changed after signing, and AWS's error shapes in both protocols. And the start-up rule:
--sqs-key needs --auth-token-file."""

import datetime
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import Client, Server, ServerTest, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_DIR = os.path.join(HERE, "..", "sqs")
TIMEOUT = 120
DEBIAN_PYTHON = "/usr/bin/python3"

ADMIN = ("AKIDADMIN0000000001", "admin/secret+Key0000000000000000000000001")
PRODUCER = ("AKIDPRODUCER0000001", "producer-secret-00000000000000000000000001")
WORKER = ("AKIDWORKER000000001", "worker-secret-000000000000000000000000001")
ADMIN_TOKEN = "admin-token-" + "x" * 30


def pair(key):
    return "%s:%s" % key


def sign(method, host, path, headers, body, key, when=None, region="us-east-1"):
    """headers plus Authorization and X-Amz-Date: SigV4 as AWS documents it (every header
    given is signed)."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz = when.strftime("%Y%m%dT%H%M%SZ")
    h = dict((k.lower(), v) for k, v in headers.items())
    h["host"] = host
    h["x-amz-date"] = amz
    names = sorted(h)
    canon = "\n".join([method, path, "",
                       "".join("%s:%s\n" % (n, " ".join(h[n].split())) for n in names),
                       ";".join(names), hashlib.sha256(body).hexdigest()])
    scope = "%s/%s/sqs/aws4_request" % (amz[:8], region)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + key[1]).encode()
    for part in (amz[:8], region, "sqs", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    out = dict(headers)
    out["X-Amz-Date"] = amz
    out["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                            % (key[0], scope, ";".join(names), sig))
    return out


class SqsAuth(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="jobq-sqsauth-")
        tokens = os.path.join(cls.tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("# bearer tokens, then SQS access keys\n%s admin\n%s:%s:admin\n"
                    "  %s:%s:worker  \n" % ((ADMIN_TOKEN,) + ADMIN + WORKER))
        os.chmod(tokens, 0o600)
        cls.sqs_port = free_port()
        cls.server_args = ("--auth-token-file", tokens, "--sqs-key", pair(PRODUCER) + ":producer",
                           "--sqs-listen", "127.0.0.1:%d" % cls.sqs_port)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, True)

    def setUp(self):
        super().setUp()
        self.sqs_q = self.q.replace(".", "-")
        self.endpoint = "http://127.0.0.1:%d" % self.sqs_port

    def key_env(self):
        return dict(os.environ, JOBQ_SQS_ADMIN=pair(ADMIN), JOBQ_SQS_PRODUCER=pair(PRODUCER),
                    JOBQ_SQS_WORKER=pair(WORKER))

    def run_client(self, cmd, cwd=SDK_DIR, env=None):
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT, env=env or self.key_env())
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        return p.returncode, out

    def post(self, target, body, key=ADMIN, ctype="application/x-amz-json-1.0", when=None,
             signed=True, tamper=None):
        body = body.encode() if isinstance(body, str) else body
        hdrs = {"Content-Type": ctype}
        if target:
            hdrs["X-Amz-Target"] = target
        if signed:
            hdrs = sign("POST", "127.0.0.1:%d" % self.sqs_port, "/", hdrs, body, key, when)
        if tamper:
            hdrs, body = tamper(hdrs, body)
        c = Client(self.sqs_port)
        self.addCleanup(c.close)
        return c.request("POST", "/", raw=body, headers=hdrs)

    def assert_error(self, r, status, type_, code):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("x-amzn-query-error"), code + ";Sender", r)
        self.assertEqual(r.json["__type"], type_, r)
        self.assertIsInstance(r.json["message"], str, r)

    def test_js_sdk(self):
        self.assertTrue(os.path.isfile(os.path.join(SDK_DIR, "node_modules", "@aws-sdk",
                                                    "client-sqs", "package.json")),
                        "tests/sqs/node_modules is missing: run scripts/deps.sh")
        rc, out = self.run_client([shutil.which("node"), "auth.mjs", self.endpoint, self.sqs_q])
        self.assertEqual(rc, 0, out + self.server.log_tail())

    def test_boto3(self):
        rc, out = self.run_client([DEBIAN_PYTHON, "auth_boto.py", self.endpoint, self.sqs_q])
        self.assertEqual(rc, 0, out + self.server.log_tail())

    def aws(self, key, *args):
        exe = shutil.which("aws")
        self.assertIsNotNone(exe, "awscli is missing: run scripts/deps.sh")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=key[0], AWS_SECRET_ACCESS_KEY=key[1],
                   AWS_DEFAULT_REGION="us-west-2", AWS_PAGER="", AWS_MAX_ATTEMPTS="1",
                   HOME=tempfile.gettempdir())
        return self.run_client([exe, "--endpoint-url", self.endpoint, "--output", "json", "sqs"]
                               + list(args), cwd=None, env=env)

    def test_awscli(self):
        rc, out = self.aws(ADMIN, "create-queue", "--queue-name", self.sqs_q)
        self.assertEqual(rc, 0, out)
        url = json.loads(out)["QueueUrl"]
        rc, out = self.aws(PRODUCER, "send-message", "--queue-url", url, "--message-body", "m")
        self.assertEqual(rc, 0, out)
        rc, out = self.aws(PRODUCER, "receive-message", "--queue-url", url)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("AccessDenied", out)
        rc, out = self.aws(WORKER, "receive-message", "--queue-url", url)
        self.assertEqual(rc, 0, out)
        self.assertEqual(json.loads(out)["Messages"][0]["Body"], "m")
        rc, out = self.aws((ADMIN[0], "wrong"), "list-queues")
        self.assertNotEqual(rc, 0, out)
        self.assertIn("SignatureDoesNotMatch", out)
        rc, out = self.aws(("AKIDNOBODY", ADMIN[1]), "list-queues")
        self.assertNotEqual(rc, 0, out)
        self.assertIn("InvalidClientTokenId", out)

    def test_signed_here_works_and_any_region(self):
        r = self.post("AmazonSQS.CreateQueue", '{"QueueName":"%s"}' % self.sqs_q)
        self.assertEqual(r.status, 200, r)
        r = self.post("AmazonSQS.ListQueues", "{}", key=WORKER)
        self.assertEqual(r.status, 200, r)

    def test_missing_and_incomplete(self):
        r = self.post("AmazonSQS.ListQueues", "{}", signed=False)
        self.assert_error(r, 403, "com.amazon.coral.service#MissingAuthenticationTokenException",
                          "MissingAuthenticationToken")
        cut = lambda h, b: (dict(h, Authorization=h["Authorization"].split(", Signature")[0]), b)
        r = self.post("AmazonSQS.ListQueues", "{}", tamper=cut)
        self.assert_error(r, 400, "com.amazon.coral.service#IncompleteSignatureException",
                          "IncompleteSignature")
        huge = lambda h, b: (dict(h, Authorization=h["Authorization"] + "x" * 9000), b)
        r = self.post("AmazonSQS.ListQueues", "{}", tamper=huge)
        self.assertIn(r.status, (400, 431), r)  # over our bound, or libmicrohttpd's

    def test_body_changed_after_signing(self):
        r = self.post("AmazonSQS.ListQueues", "{}", tamper=lambda h, b: (h, b + b" "))
        self.assert_error(r, 403, "com.amazon.coral.service#InvalidSignatureException",
                          "SignatureDoesNotMatch")

    def test_request_expired(self):
        when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
        r = self.post("AmazonSQS.ListQueues", "{}", when=when)
        self.assert_error(r, 400, "com.amazon.coral.service#RequestExpired", "RequestExpired")
        when += datetime.timedelta(minutes=10)  # 10 minutes off: within AWS's 15
        r = self.post("AmazonSQS.ListQueues", "{}", when=when)
        self.assertEqual(r.status, 200, r)

    def test_query_protocol_errors_are_xml(self):
        form = b"Action=ListQueues&Version=2012-11-05"
        r = self.post(None, form, ctype="application/x-www-form-urlencoded", signed=False)
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.header("Content-Type"), "text/xml", r)
        self.assertIn(b"<Code>MissingAuthenticationToken</Code>", r.body)
        r = self.post(None, b"Action=PurgeQueue&QueueUrl=http://x/000000000000/q", key=PRODUCER,
                      ctype="application/x-www-form-urlencoded")
        self.assertEqual(r.status, 403, r)
        self.assertIn(b"<Code>AccessDenied</Code>", r.body)
        self.assertEqual(r.header("x-amzn-query-error"), "AccessDenied;Sender", r)

    def test_zz_no_secret_in_the_log(self):  # last: after the others have logged
        self.test_body_changed_after_signing()
        log = self.server.log_tail(10000)
        for key in (ADMIN, PRODUCER, WORKER):
            self.assertNotIn(key[1], log)
        self.assertIn("3 access keys", log)

    def test_native_api_still_takes_bearer_tokens(self):
        r = Client(self.server.port).get("/queues", headers={"Authorization":
                                                             "Bearer " + ADMIN_TOKEN})
        self.assertEqual(r.status, 200, r)


class SqsKeyNeedsAuth(unittest.TestCase):
    def test_sqs_key_without_token_file_refused(self):
        srv = Server(["--sqs-listen", "127.0.0.1:%d" % free_port(), "--sqs-key",
                      pair(ADMIN) + ":admin"])
        self.addCleanup(srv.cleanup)
        with self.assertRaises(AssertionError):
            srv.start()
        log = srv.log_tail()
        self.assertIn("sqs-key", log)
        self.assertNotIn(ADMIN[1], log)


if __name__ == "__main__":
    unittest.main()
