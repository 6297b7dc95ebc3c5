"""Webhooks (API.md "Events, webhooks and trace context"; docs/events.md "Webhooks"): every
delivery is verified by an independent implementation of Standard Webhooks (the npm
standardwebhooks package, in tests/webhooks/receiver.mjs on 127.0.0.1): signatures valid, the
same webhook-id on every retry, retries spaced by the backoff and by a Retry-After, 410
disables, a job's events in order, an ordered subscription held behind a failing event, both
secrets valid while rotating, private addresses refused at PUT and at delivery without
--webhook-allow-private, the 400s; on PostgreSQL each event delivered once with three jobqd
processes. --webhook-retry-base 1 keeps the retries to seconds; every wait is bounded."""

import email.utils
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import Server, ServerTest, backend, faketime_env, wait_until
from test_metrics import promtool_check
from test_tls import make_pki

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER_DIR = os.path.join(HERE, "..", "webhooks")
SECRET_A = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECRET_B = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
DELIVERY_TIMEOUT = 30


class Receiver:
    """tests/webhooks/receiver.mjs: plan(path, ...) sets what a path answers and the secrets
    its deliveries are verified with; log(path) is what it received."""

    def __init__(self, tls=None):
        node = shutil.which("node")
        assert node, "node is missing: run scripts/deps.sh"
        assert os.path.isfile(os.path.join(RECEIVER_DIR, "node_modules", "standardwebhooks",
                                           "package.json")), \
            "standardwebhooks is missing: run scripts/deps.sh"
        self.tls = tls  # (cert, key, ca) files: https
        self.proc = subprocess.Popen([node, os.path.join(RECEIVER_DIR, "receiver.mjs"), "0"]
                                     + (list(tls[:2]) if tls else []),
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        self.port = json.loads(line)["port"]

    def url(self, path, host="127.0.0.1"):
        return "%s://%s:%d%s" % ("https" if self.tls else "http", host, self.port, path)

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        rq = urllib.request.Request(self.url(path), data=data, method=method,
                                    headers={"content-type": "application/json"})
        ctx = ssl.create_default_context(cafile=self.tls[2]) if self.tls else None
        with urllib.request.urlopen(rq, timeout=10, context=ctx) as r:
            return r.read()

    def plan(self, path, secrets=(), answers=()):
        self._call("POST", "/_plan", {"path": path, "secrets": list(secrets),
                                      "answers": list(answers)})

    def log(self, path):
        return [d for d in json.loads(self._call("GET", "/_log")) if d["path"] == path]

    def wait(self, path, n, what=None):
        return wait_until(lambda: len(self.log(path)) >= n and self.log(path), DELIVERY_TIMEOUT,
                          interval=0.1, what=what or "%d deliveries to %s" % (n, path))

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()


class HookTest(ServerTest):
    """One receiver per class; each test its own path, subscription and queue."""

    server_args = ["--webhook-allow-private", "--webhook-retry-base", "1"]

    receiver_tls = None

    @classmethod
    def setUpClass(cls):
        cls.receiver = Receiver(cls.receiver_tls)
        try:
            super().setUpClass()
        except Exception:
            cls.receiver.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.receiver.stop()

    def setUp(self):
        super().setUp()
        self.path = "/" + self.q
        self.name = self.q.replace("-", "_")

    def put_hook(self, status=(200, 201), name=None, **fields):
        body = {"url": self.receiver.url(self.path), "queues": [self.q]}
        body.update(fields)
        r = self.req("PUT", "/webhooks/%s" % (name or self.name), body)
        self.assertIn(r.status, status, r)
        return r.json

    def hook(self):
        r = self.req("GET", "/webhooks/%s" % self.name)
        self.assertEqual(r.status, 200, r)
        return r.json

    def body(self, d):
        return json.loads(d["body"])


class WebhooksTest(HookTest):
    def test_signed_and_in_order_per_job(self):
        w = self.put_hook()
        self.assertIn("secret", w)  # generated and shown once
        self.assertTrue(w["secret"].startswith("whsec_"), w)
        self.receiver.plan(self.path, [w["secret"]])
        ids = [self.enqueue()["id"] for _ in range(3)]
        for _ in range(3):
            for j in self.claim():
                self.act(j["id"], "complete", {"lease_token": j["lease_token"]})
        got = self.receiver.wait(self.path, 9)
        self.assertEqual(len(got), 9, got)
        for d in got:
            self.assertEqual(d["verified"], [True], d)
            self.assertEqual(d["content_type"], "application/json", d)
        seqs = [self.body(d)["seq"] for d in got]
        self.assertEqual(seqs, sorted(seqs))
        self.assertEqual(len({d["id"] for d in got}), 9)
        for d in got:
            self.assertEqual(d["id"], "jobq_%s_%d" % (self.name, self.body(d)["seq"]))
        for i in ids:
            types = [self.body(d)["type"] for d in got if self.body(d)["job"]["id"] == i]
            self.assertEqual(types, ["job.created", "job.claimed", "job.succeeded"])
        # The body is the event as GET /events shows it.
        r = self.req("GET", "/events?queue=%s&limit=100" % self.q,
                     headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["events"], [self.body(d) for d in got])
        h = wait_until(lambda: self.hook()["deliveries"] == 9 and self.hook(), 10,
                       what="the delivery state")
        self.assertNotIn("secret", h)
        self.assertEqual(h["delivered_seq"], seqs[-1])
        self.assertIsNone(h["failing_since"])
        self.assertEqual(h["last_status"], 200)
        # /metrics: the store's counts and the lag as the last delivery pass saw them.
        def metrics():
            text = self.req("GET", "/metrics").body.decode()
            want = ['jobq_webhook_deliveries_total{webhook="%s"} 9' % self.name,
                    'jobq_webhook_failures_total{webhook="%s"} 0' % self.name,
                    'jobq_webhook_lag_events{webhook="%s"} 0' % self.name,
                    'jobq_webhook_lag_seconds{webhook="%s"} 0' % self.name]
            return all(w in text.splitlines() for w in want) and text
        promtool_check(self, wait_until(metrics, 10, what="the webhook metrics"))
        r = self.req("GET", "/webhooks")
        self.assertEqual(r.status, 200, r)
        names = [x["name"] for x in r.json["webhooks"]]
        self.assertIn(self.name, names)
        self.assertNotIn("secret", r.json["webhooks"][names.index(self.name)])

    def test_retries_keep_the_id_and_back_off(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A], [{"status": 500}, {"status": 500},
                                                   {"status": 503, "retry_after": 6}])
        self.enqueue()
        got = self.receiver.wait(self.path, 4)
        self.assertEqual([d["status"] for d in got], [500, 500, 503, 200])
        self.assertEqual(len({d["id"] for d in got}), 1, got)  # the same id on every retry
        self.assertEqual(len({d["body"] for d in got}), 1, got)
        for d in got:
            self.assertEqual(d["verified"], [True], d)
        # The waits are 1 s, 2 s (doubled), then the Retry-After's 6 s, longer than the 4 s
        # of the backoff; the store's clock counts whole seconds, so a wait of w seconds
        # lasts more than w - 1.
        gaps = [(b["at_ms"] - a["at_ms"]) / 1000.0 for a, b in zip(got, got[1:])]
        self.assertGreaterEqual(gaps[1], 1.0, gaps)
        self.assertGreaterEqual(gaps[2], 5.0, gaps)
        h = wait_until(lambda: self.hook()["deliveries"] == 1 and self.hook(), 10,
                       what="the delivery state")
        self.assertEqual(h["failures"], 3)
        self.assertEqual(h["last_error"], "HTTP 503")
        self.assertIsNone(h["failing_since"])
        self.assertIsNone(h["next_attempt_at"])

    def test_retry_after_as_an_http_date(self):
        # RFC 9110: Retry-After may be an HTTP-date, read against the store's clock. A date
        # 4 s ahead holds the retry past the 1 s backoff.
        self.put_hook(secret=SECRET_A, types=["job.created"])
        when = email.utils.formatdate(time.time() + 4, usegmt=True)
        self.receiver.plan(self.path, [SECRET_A], [{"status": 503, "retry_after": when}])
        self.enqueue()
        got = self.receiver.wait(self.path, 2)
        self.assertEqual([d["status"] for d in got], [503, 200])
        gap = (got[1]["at_ms"] - got[0]["at_ms"]) / 1000.0
        self.assertGreaterEqual(gap, 2.0, (gap, when))

    def test_deliveries_carry_the_jobs_traceparent(self):
        # A job enqueued with a traceparent header: each of its deliveries has it as the
        # traceparent header and as the event's field; a job without one has neither.
        w = self.put_hook()
        self.receiver.plan(self.path, [w["secret"]])
        r = self.c.post("/jobs", {"queue": self.q, "payload": 1}, headers={"traceparent": TP})
        self.assertEqual(r.status, 201, r)
        traced = r.json["id"]
        plain = self.enqueue()["id"]
        for _ in range(2):
            for j in self.claim():
                self.act(j["id"], "complete", {"lease_token": j["lease_token"]})
        got = self.receiver.wait(self.path, 6)
        for d in got:
            self.assertEqual(d["verified"], [True], d)
            body = self.body(d)
            want = TP if body["job"]["id"] == traced else None
            self.assertIn(body["job"]["id"], (traced, plain))
            self.assertEqual((d["traceparent"], body["traceparent"]), (want, want), d)
        self.assertEqual(sorted(self.body(d)["type"] for d in got
                                if self.body(d)["job"]["id"] == traced),
                         ["job.claimed", "job.created", "job.succeeded"])

    def test_delivery_starts_when_the_event_commits(self):
        # The process that commits an event wakes its delivery thread: an event reaches the
        # receiver in milliseconds, not at the next half-second pass (without the wake, eight
        # of them would wait about 2 s in all).
        w = self.put_hook(types=["job.created"])
        self.receiver.plan(self.path, [w["secret"]])
        self.enqueue()
        self.receiver.wait(self.path, 1)  # a pass has seen the subscription
        waited = []
        for i in range(8):
            before = time.time() * 1000
            self.enqueue()
            got = self.receiver.wait(self.path, i + 2)
            waited.append(got[i + 1]["at_ms"] - before)
        self.assertLess(sum(waited), 1000, waited)

    def test_gone_disables_until_enabled_again(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A], [{"status": 410}])
        self.enqueue()
        first = self.receiver.wait(self.path, 1)[0]
        h = wait_until(lambda: not self.hook()["enabled"] and self.hook(), 10,
                       what="the subscription disabled")
        self.assertIn("410", h["disabled_reason"])
        self.assertIsNotNone(h["failing_since"])
        self.enqueue()
        # Disabled: nothing more is sent (three delivery passes).
        time.sleep(1.5)
        self.assertEqual(len(self.receiver.log(self.path)), 1)
        # Enabled again: the event it held is sent again, with its id, then the next.
        h = self.put_hook(secret=SECRET_A, types=["job.created"], enabled=True)
        self.assertIsNone(h["disabled_reason"])
        got = self.receiver.wait(self.path, 3)
        self.assertEqual(got[1]["id"], first["id"])
        self.assertNotEqual(got[2]["id"], first["id"])
        self.assertEqual([d["status"] for d in got], [410, 200, 200])

    def test_ordered_subscription_holds_behind_a_failure(self):
        self.put_hook(secret=SECRET_A, types=["job.created"], ordered=True)
        self.receiver.plan(self.path, [SECRET_A], [{"status": 500}, {"status": 500}])
        a = self.enqueue()["id"]
        b = self.enqueue()["id"]
        got = self.receiver.wait(self.path, 4)
        self.assertEqual([(self.body(d)["job"]["id"], d["status"]) for d in got],
                         [(a, 500), (a, 500), (a, 200), (b, 200)])
        self.assertTrue(self.hook()["ordered"])

    def test_unordered_goes_around_a_failing_job(self):
        self.put_hook(secret=SECRET_A, types=["job.created", "job.cancelled"])
        self.receiver.plan(self.path, [SECRET_A], [{"status": 500}])
        a = self.enqueue()["id"]
        b = self.enqueue()["id"]
        self.act(a, "cancel")
        got = self.receiver.wait(self.path, 4)
        # A's first event fails and is set aside with its retry; B's goes on; A's later event
        # waits behind A's first, which its retry delivers first.
        self.assertEqual([(self.body(d)["job"]["id"], self.body(d)["type"], d["status"])
                          for d in got],
                         [(a, "job.created", 500), (b, "job.created", 200),
                          (a, "job.created", 200), (a, "job.cancelled", 200)])
        self.assertEqual(got[0]["id"], got[2]["id"])
        h = wait_until(lambda: self.hook()["deliveries"] == 3 and self.hook(), 10,
                       what="the delivery state")
        self.assertEqual((h["parked"], h["retry_at"], h["failures"]), (0, None, 1))

    def test_rotation_signs_with_both_secrets(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A, SECRET_B])
        self.enqueue()
        got = self.receiver.wait(self.path, 1)
        self.assertEqual(got[0]["verified"], [True, False])
        w = self.put_hook(secret=SECRET_B, types=["job.created"])
        self.assertNotIn("secret", w)  # a secret given is never shown back
        self.assertGreater(w["previous_secret_until"], time.time() + 86000)
        self.enqueue()
        got = self.receiver.wait(self.path, 2)
        self.assertEqual(got[1]["verified"], [True, True])
        self.assertEqual(len(got[1]["signature"].split(" ")), 2, got[1])
        # Replaced without a secret: the secret stays, and so does the rotation.
        w = self.put_hook(types=["job.created"])
        self.assertNotIn("secret", w)
        self.enqueue()
        got = self.receiver.wait(self.path, 3)
        self.assertEqual(got[2]["verified"], [True, True])

    def test_delete(self):
        self.put_hook(secret=SECRET_A)
        r = self.req("DELETE", "/webhooks/%s" % self.name)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.req("GET", "/webhooks/%s" % self.name).status, 404)
        self.assertEqual(self.req("DELETE", "/webhooks/%s" % self.name).status, 404)

    def test_bad_input_is_400(self):
        url = self.receiver.url(self.path)
        bad = [
            {},
            {"url": "ftp://example.com/"},
            {"url": "example.com"},
            {"url": "http://user@127.0.0.1/"},
            {"url": "http://127.0.0.1:99999/"},
            {"url": "http://h/" + "a" * 2100},
            {"url": 5},
            {"url": url, "secret": "nope"},
            {"url": url, "secret": "whsec_c2hvcnQ="},
            {"url": url, "secret": "whsec_" + "%%%%" * 8},
            {"url": url, "types": ["job.nope"]},
            {"url": url, "types": "job.created"},
            {"url": url, "queues": ["bad name"]},
            {"url": url, "enabled": "yes"},
        ]
        for body in bad:
            r = self.req("PUT", "/webhooks/%s" % self.name, body)
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json["error"]["code"], "invalid_request", (body, r))
        r = self.req("PUT", "/webhooks/" + "n" * 129, {"url": url})
        self.assertEqual(r.status, 400, r)
        r = self.req("PUT", "/webhooks/a%20b", {"url": url})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(self.req("GET", "/webhooks/%s" % self.name).status, 404)


class PrivateTest(HookTest):
    """Without --webhook-allow-private."""

    server_args = ["--webhook-retry-base", "1"]

    def test_private_addresses_refused_at_put(self):
        for url, what in [("http://127.0.0.1:9/x", "loopback"), ("http://[::1]/", "loopback"),
                          ("http://localhost/", "loopback"), ("http://10.1.2.3/", "private"),
                          ("http://192.168.0.1/", "private"),
                          ("http://169.254.169.254/", "link-local"),
                          ("http://0.0.0.0/", "unspecified")]:
            r = self.req("PUT", "/webhooks/%s" % self.name, {"url": url})
            self.assertEqual(r.status, 400, (url, r))
            self.assertIn(what, r.json["error"]["message"], (url, r))
            self.assertIn("--webhook-allow-private", r.json["error"]["message"])


@unittest.skipUnless(backend() == "sqlite", "the TLS client is the same on both backends")
class HttpsTest(HookTest):
    """An https receiver with a certificate for IP 127.0.0.1 from a CA that jobqd trusts
    (SSL_CERT_FILE: OpenSSL's default verify paths): delivered and verified; the same
    receiver named localhost (not in its certificate) fails the handshake."""

    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="jobq-wh-tls-")
        cls.addClassCleanup(shutil.rmtree, d, ignore_errors=True)
        make_pki(d)
        cls.receiver_tls = tuple(os.path.join(d, f) for f in ("server.pem", "server.key",
                                                               "ca.pem"))
        before = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = cls.receiver_tls[2]  # jobqd inherits it
        try:
            super().setUpClass()
        finally:
            if before is None:
                del os.environ["SSL_CERT_FILE"]
            else:
                os.environ["SSL_CERT_FILE"] = before

    def test_delivered_over_verified_tls(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.put_hook(name=self.name + "_byname", secret=SECRET_A, types=["job.created"],
                      url=self.receiver.url(self.path + "/byname", host="localhost"))
        self.receiver.plan(self.path, [SECRET_A])
        self.enqueue()
        got = self.receiver.wait(self.path, 1)
        self.assertEqual(got[0]["verified"], [True])
        r = wait_until(lambda: self.req("GET", "/webhooks/%s_byname" % self.name).json
                       ["failures"] >= 1 and self.req("GET", "/webhooks/%s_byname" % self.name),
                       DELIVERY_TIMEOUT, what="the handshake refused")
        self.assertIn("tls handshake failed", r.json["last_error"], r.json)
        self.assertEqual(self.receiver.log(self.path + "/byname"), [])


@unittest.skipUnless(backend() == "sqlite", "a restart of the same SQLite file")
class RebindTest(HookTest):
    """A subscription made while private addresses were allowed is refused at delivery once
    they are not: the address is checked after resolving, at every attempt."""

    server_per_test = True

    def test_private_address_refused_at_delivery(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.server.terminate()
        self.server.args = ["--webhook-retry-base", "1"]
        self.server.start()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        self.receiver.plan(self.path, [SECRET_A])
        self.enqueue()
        h = wait_until(lambda: self.hook()["failures"] >= 1 and self.hook(), DELIVERY_TIMEOUT,
                       what="a refused attempt")
        self.assertIn("loopback", h["last_error"])
        self.assertEqual(h["last_status"], 0)
        self.assertIsNotNone(h["failing_since"])
        self.assertEqual(h["parked"], 1)  # set aside, with its retry
        self.assertIsNotNone(h["retry_at"])
        self.assertEqual(self.receiver.log(self.path), [])


@unittest.skipUnless(backend() == "sqlite", "a restart of the same SQLite file on a moved clock")
class GiveUpTest(HookTest):
    """An event that has failed for 3 days is given up: counted, and no longer tried (a jobqd
    restarted on a clock 3 days ahead makes the next attempt)."""

    server_per_test = True

    def test_given_up_after_three_days(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A], [{"status": 500}] * 20)
        self.enqueue()
        h = wait_until(lambda: self.hook()["failures"] >= 1 and self.hook(), DELIVERY_TIMEOUT,
                       what="a failed attempt")
        self.assertEqual(h["parked"], 1)
        self.assertIsNotNone(h["failing_since"])
        self.server.terminate()
        self.server.env = faketime_env(3 * 86400 + 60)
        self.server.start()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        h = wait_until(lambda: self.hook()["failed_events"] == 1 and self.hook(),
                       DELIVERY_TIMEOUT, what="the event given up")
        self.assertEqual((h["parked"], h["retry_at"], h["failing_since"]), (0, None, None))
        self.assertEqual(h["deliveries"], 0)
        n = len(self.receiver.log(self.path))
        self.assertGreaterEqual(n, 2)
        time.sleep(1.5)  # three passes: nothing more is tried
        self.assertEqual(len(self.receiver.log(self.path)), n)


@unittest.skipUnless(backend() == "sqlite", "a restart of the same SQLite file on a moved clock")
class CrashTest(HookTest):
    """A jobqd killed (-9) while its receiver has the event loses the delivery lease: the next
    jobqd takes it over once it ends (restarted on a clock past the 60 s lease) and sends the
    event again with the same webhook-id; the receiver dedupes on it."""

    server_per_test = True

    def test_a_crash_mid_delivery_repeats_the_event_with_its_id(self):
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A], [{"status": 200, "delay_ms": 10000}])
        self.enqueue()
        first = self.receiver.wait(self.path, 1)[0]  # it has the event; the answer waits
        self.server.kill9()
        self.server.env = faketime_env(120)
        self.server.start()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        got = self.receiver.wait(self.path, 2)
        self.assertEqual(got[1]["id"], first["id"])
        self.assertEqual(got[1]["body"], first["body"])
        h = wait_until(lambda: self.hook()["deliveries"] == 1 and self.hook(), DELIVERY_TIMEOUT,
                       what="the delivery state")
        self.assertEqual(h["delivered_seq"], json.loads(first["body"])["seq"])


@unittest.skipUnless(backend() == "pg", "several processes share a database on PostgreSQL only")
class ProcessesTest(HookTest):
    def test_three_processes_deliver_each_event_once(self):
        others = []
        for _ in range(2):
            srv = Server(self.server_args, db=self.server.db)
            self.addCleanup(srv.cleanup)
            srv.start()
            self.addCleanup(srv.stop_checked, self)
            others.append(srv)
        self.put_hook(secret=SECRET_A, types=["job.created"])
        self.receiver.plan(self.path, [SECRET_A])
        clients = [self.c] + [srv.client() for srv in others]
        for c in clients[1:]:
            self.addCleanup(c.close)
        n = 30
        for i in range(n):
            r = clients[i % 3].post("/jobs", {"queue": self.q, "payload": {"i": i}})
            self.assertEqual(r.status, 201, r)
        got = self.receiver.wait(self.path, n)
        h = wait_until(lambda: self.hook()["deliveries"] >= n and self.hook(), DELIVERY_TIMEOUT,
                       what="the delivery state")
        got = self.receiver.log(self.path)
        self.assertEqual(len(got), n, [d["id"] for d in got])
        self.assertEqual(len({d["id"] for d in got}), n)
        self.assertEqual(h["deliveries"], n)
        for d in got:
            self.assertEqual(d["verified"], [True], d)
        seqs = [self.body(d)["seq"] for d in got]
        self.assertEqual(seqs, sorted(seqs))


if __name__ == "__main__":
    unittest.main()
