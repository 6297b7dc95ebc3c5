"""Authentication and roles: --auth-token-file, "Authorization: Bearer TOKEN", 401 with
WWW-Authenticate for a missing or unknown token, 403 for a role that may not use a route, the
role matrix over the real endpoints, open health checks, tokens never in the log, and the
start-up rules (bad token files, non-loopback listen without authentication)."""

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

import harness
from harness import (HOST, START_TIMEOUT, STOP_TIMEOUT, Client, Server, ServerTest, TestDatabase,
                     jobqd_path, read_response, wait_until)

# The harness's $JOBQD_WRAPPER (e.g. valgrind), when it has one, for the processes started here.
WRAPPER = list(getattr(harness, "WRAPPER", []))

CHALLENGE = 'Bearer realm="jobq"'


def make_token(role):
    return "%s-%s" % (role, secrets.token_urlsafe(24))


PRODUCER = make_token("producer")
WORKER = make_token("worker")
ADMIN = make_token("admin")
# A second admin token that differs from ADMIN only in its last character, and a token that is
# never in the file.
ADMIN2 = ADMIN[:-1] + ("A" if ADMIN[-1] != "A" else "B")
STRANGER = make_token("stranger")
ALL_TOKENS = (PRODUCER, WORKER, ADMIN, ADMIN2, STRANGER)


def token_file(directory, text):
    path = os.path.join(directory, "tokens")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def bearer(token):
    return {"Authorization": "Bearer " + token}


def run_to_exit(args, env=None, timeout=START_TIMEOUT):
    """Run jobqd expecting it to refuse to start. Returns (exit code, output text)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
    full_env.update(env or {})
    p = subprocess.run(WRAPPER + [jobqd_path()] + args, stdin=subprocess.DEVNULL,
                       capture_output=True, env=full_env, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


class Spawned:
    """jobqd with a listen address of our choosing (the harness always listens on
    127.0.0.1): the bound port is read from the start-up log line."""

    def __init__(self, args, env=None):
        self.tmpdir = tempfile.mkdtemp(prefix="jobq-auth-")
        self.database = TestDatabase(self.tmpdir)  # a SQLite file in tmpdir, or a pg database
        self.log_path = os.path.join(self.tmpdir, "jobqd.log")
        self.log = open(self.log_path, "wb")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            WRAPPER + [jobqd_path(), "--db", self.database.url] + args,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        self.port = None

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_listening(self):
        def port():
            if self.proc.poll() is not None:
                raise AssertionError("jobqd exited with %d:\n%s"
                                     % (self.proc.returncode, self.text()))
            m = re.search(r"listening on \S+:(\d+) ", self.text())
            return int(m.group(1)) if m else None
        self.port = wait_until(port, START_TIMEOUT, what="the listening line")
        return self.port

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
            return None

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
        self.log.close()
        self.database.drop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class AuthServerTest(ServerTest):
    """One jobqd with a token file for the class, logging at debug level (every request's
    access line), so that the test of the log sees everything the other tests sent."""

    @classmethod
    def setUpClass(cls):
        cls.tokdir = tempfile.mkdtemp(prefix="jobq-tokens-")
        path = token_file(cls.tokdir, "# jobq test tokens\n\n"
                                      "%s producer\n"
                                      "  %s\tworker\r\n"
                                      "%s admin\n"
                                      "# %s admin (commented out)\n"
                                      "%s admin\n" % (PRODUCER, WORKER, ADMIN, STRANGER, ADMIN2))
        cls.server_args = ("--auth-token-file", path, "--log-level", "debug",
                           "--max-body-bytes", "65536")
        try:
            super().setUpClass()
        except Exception:
            shutil.rmtree(cls.tokdir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            log = ""
            if cls.server is not None:
                with open(cls.server.log_path, "rb") as f:
                    log = f.read().decode("utf-8", "replace")
            super().tearDownClass()
            for t in ALL_TOKENS:
                if t in log:
                    raise AssertionError("a token appears in the server's log")
        finally:
            shutil.rmtree(cls.tokdir, ignore_errors=True)

    def as_(self, token, method, path, body=None, **kw):
        headers = dict(kw.pop("headers", {}))
        if token is not None:
            headers.update(bearer(token))
        return self.c.request(method, path, body=body, headers=headers, **kw)

    def assert_401(self, r):
        self.assert_error(r, 401, "unauthorized")
        self.assertEqual(r.header("www-authenticate"), CHALLENGE, r.headers)

    def assert_403(self, r, role=None):
        self.assert_error(r, 403, "forbidden", mentions=role)
        self.assertIsNone(r.header("www-authenticate"), r.headers)

    def enqueue_as(self, token, **fields):
        body = {"queue": self.q, "payload": {"n": 1}}
        body.update(fields)
        r = self.as_(token, "POST", "/jobs", body)
        self.assertEqual(r.status, 201, r)
        self.assert_job(r.json)
        return r.json

    def claim_as(self, token, expect=1):
        r = self.as_(token, "POST", "/claim", {"worker_id": "w1", "queue": self.q})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["jobs"]), expect, r)
        return r.json["jobs"]


class Unauthenticated(AuthServerTest):
    # Every route of the table, plus paths and methods that do not exist: without a valid
    # token all of them are 401 (an unknown path does not turn into 404 for a stranger).
    REQUESTS = (
        ("POST", "/jobs", {"payload": 1}), ("GET", "/jobs", None),
        ("POST", "/jobs/batch", {"jobs": [{"payload": 1}]}), ("GET", "/jobs/1", None),
        ("POST", "/jobs/1/heartbeat", {"lease_token": "x" * 22}),
        ("POST", "/jobs/1/complete", {"lease_token": "x" * 22}),
        ("POST", "/jobs/1/fail", {"lease_token": "x" * 22}), ("POST", "/jobs/1/cancel", None),
        ("POST", "/jobs/1/retry", None), ("POST", "/claim", {"worker_id": "w"}),
        ("GET", "/queues", None), ("GET", "/metrics", None), ("GET", "/nope", None),
        ("DELETE", "/jobs", None), ("POST", "/healthz", None), ("GET", "/jobs/0", None),
    )

    def test_no_token_is_401_with_challenge(self):
        for method, path, body in self.REQUESTS:
            with self.subTest(method=method, path=path):
                r = self.as_(None, method, path, body)
                self.assert_401(r)
                self.assertIn("Authorization", r.json["error"]["message"])

    def test_unknown_or_malformed_token_is_401(self):
        bad_headers = (
            "Bearer " + STRANGER, "Bearer " + PRODUCER[:-1], "Bearer " + PRODUCER + "x",
            "Bearer " + PRODUCER.upper(), "Bearer " + PRODUCER + " " + PRODUCER,
            "Basic " + PRODUCER, PRODUCER, "Bearer", "Bearer ", "Bearer " + "a" * 300,
            "Bearer admin", "Bearer producer",
        )
        for value in bad_headers:
            for method, path, body in (("GET", "/jobs", None), ("POST", "/jobs", {"payload": 1}),
                                       ("POST", "/jobs/1/cancel", None)):
                with self.subTest(header=value[:20], path=path):
                    r = self.as_(None, method, path, body, headers={"Authorization": value})
                    self.assert_401(r)
                    for t in ALL_TOKENS:
                        self.assertNotIn(t, r.body.decode("utf-8", "replace"))

    def test_health_checks_stay_open(self):
        for token in (None, STRANGER, PRODUCER):
            r = self.as_(token, "GET", "/healthz")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json, {"status": "ok"})
            r = self.as_(token, "GET", "/readyz")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json, {"status": "ready"})

    def test_auth_comes_before_body_checks(self):
        # Without a token the body is never judged: no 400, 413 or 415 for a stranger.
        r = self.as_(None, "POST", "/jobs", raw=b"{not json", headers={
            "Content-Type": "application/json"})
        self.assert_401(r)
        r = self.as_(None, "POST", "/jobs", raw=b"hello", headers={"Content-Type": "text/plain"})
        self.assert_401(r)
        # With a token but the wrong role: 403 before the body is looked at.
        r = self.as_(PRODUCER, "POST", "/claim", raw=b"{not json",
                     headers={"Content-Type": "application/json"})
        self.assert_403(r, "producer")
        r = self.as_(WORKER, "POST", "/jobs", raw=b"x", headers={"Content-Type": "text/plain"})
        self.assert_403(r, "worker")
        # The right role: the body checks apply as usual.
        r = self.as_(PRODUCER, "POST", "/jobs", raw=b"{not json",
                     headers={"Content-Type": "application/json"})
        self.assert_error(r, 400, "invalid_json")
        # A known token on an unknown path or method: now 404 and 405.
        self.assert_error(self.as_(WORKER, "GET", "/nope"), 404, "not_found")
        r = self.as_(WORKER, "DELETE", "/jobs")
        self.assert_error(r, 405, "method_not_allowed")
        self.assertIsNotNone(r.header("allow"), r.headers)

    def test_refused_body_is_drained_and_connection_kept(self):
        # A refused POST with a body under the limit: the answer is the 401, and the same
        # keep-alive connection serves the next request.
        body = {"payload": "x" * 30000, "queue": self.q}
        r = self.as_(None, "POST", "/jobs", body)
        self.assert_401(r)
        self.assertIsNotNone(self.c.conn, "the connection was closed after a drained 401")
        r = self.as_(PRODUCER, "GET", "/jobs?queue=%s" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["jobs"], [])  # nothing was enqueued by the refused request

    def test_refused_large_or_waiting_body_answered_without_reading_it(self):
        # A body announced over --max-body-bytes (65536), or held back for "100 Continue":
        # answered at once, without waiting for a body that may never come.
        for extra in ({"Content-Length": "10000000"},
                      {"Content-Length": "100", "Expect": "100-continue"}):
            with self.subTest(headers=extra):
                head = "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                head += "".join("%s: %s\r\n" % kv for kv in extra.items()) + "\r\n"
                sock = socket.create_connection((HOST, self.server.port), timeout=10)
                try:
                    sock.sendall(head.encode())
                    r = read_response(sock, timeout=10)
                finally:
                    sock.close()
                self.assert_401(r)


class Roles(AuthServerTest):
    def test_producer_enqueues_and_reads_only(self):
        job = self.enqueue_as(PRODUCER)
        r = self.as_(PRODUCER, "POST", "/jobs/batch", {"jobs": [{"payload": 2, "queue": self.q}]})
        self.assertEqual(r.status, 201, r)
        for path in ("/jobs/%d" % job["id"], "/jobs?queue=%s" % self.q, "/queues"):
            r = self.as_(PRODUCER, "GET", path)
            self.assertEqual(r.status, 200, (path, r))
        r = self.as_(PRODUCER, "GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("text/plain"), r.headers)
        # Claiming and everything after it, and the admin actions: 403.
        self.assert_403(self.as_(PRODUCER, "POST", "/claim", {"worker_id": "w", "queue": self.q}),
                        "producer")
        lease = {"lease_token": "x" * 22}
        for action in ("heartbeat", "complete", "fail"):
            r = self.as_(PRODUCER, "POST", "/jobs/%d/%s" % (job["id"], action), lease)
            self.assert_403(r, "producer")
        for action in ("cancel", "retry"):
            r = self.as_(PRODUCER, "POST", "/jobs/%d/%s" % (job["id"], action))
            self.assert_403(r, "producer")
        # Nothing changed: the job is still queued.
        r = self.as_(PRODUCER, "GET", "/jobs/%d" % job["id"])
        self.assertEqual(r.json["status"], "queued", r)

    def test_worker_claims_and_reports_only(self):
        first = self.enqueue_as(PRODUCER)
        second = self.enqueue_as(PRODUCER)
        # No enqueueing, no admin actions.
        r = self.as_(WORKER, "POST", "/jobs", {"payload": 1, "queue": self.q})
        self.assert_403(r, "worker")
        r = self.as_(WORKER, "POST", "/jobs/batch", {"jobs": [{"payload": 1}]})
        self.assert_403(r, "worker")
        self.assert_403(self.as_(WORKER, "POST", "/jobs/%d/cancel" % first["id"]), "worker")
        self.assert_403(self.as_(WORKER, "POST", "/jobs/%d/retry" % first["id"]), "worker")
        # Claim, heartbeat, complete; claim, fail.
        j = self.claim_as(WORKER)[0]
        self.assertEqual(j["id"], first["id"])
        r = self.as_(WORKER, "POST", "/jobs/%d/heartbeat" % j["id"],
                     {"lease_token": j["lease_token"], "progress": {"p": 1}})
        self.assertEqual(r.status, 200, r)
        r = self.as_(WORKER, "POST", "/jobs/%d/complete" % j["id"],
                     {"lease_token": j["lease_token"], "result": "ok"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "succeeded")
        j = self.claim_as(WORKER)[0]
        self.assertEqual(j["id"], second["id"])
        r = self.as_(WORKER, "POST", "/jobs/%d/fail" % j["id"],
                     {"lease_token": j["lease_token"], "retry": False})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "failed")
        for path in ("/jobs/%d" % j["id"], "/jobs?queue=%s" % self.q, "/queues", "/metrics"):
            self.assertEqual(self.as_(WORKER, "GET", path).status, 200, path)

    def test_admin_does_everything(self):
        for admin in (ADMIN, ADMIN2):
            job = self.enqueue_as(admin)
            r = self.as_(admin, "POST", "/jobs/batch", {"jobs": [{"payload": 2, "queue": self.q}]})
            self.assertEqual(r.status, 201, r)
            j = self.claim_as(admin, expect=1)[0]
            r = self.as_(admin, "POST", "/jobs/%d/heartbeat" % j["id"],
                         {"lease_token": j["lease_token"]})
            self.assertEqual(r.status, 200, r)
            r = self.as_(admin, "POST", "/jobs/%d/fail" % j["id"],
                         {"lease_token": j["lease_token"], "retry": False})
            self.assertEqual(r.json["status"], "failed", r)
            r = self.as_(admin, "POST", "/jobs/%d/retry" % job["id"])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["status"], "queued")
            r = self.as_(admin, "POST", "/jobs/%d/cancel" % job["id"])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["status"], "cancelled")
            j = self.claim_as(admin, expect=1)[0]  # the batch job
            r = self.as_(admin, "POST", "/jobs/%d/complete" % j["id"],
                         {"lease_token": j["lease_token"]})
            self.assertEqual(r.json["status"], "succeeded", r)
            for path in ("/jobs/%d" % job["id"], "/jobs?queue=%s" % self.q, "/queues",
                         "/metrics"):
                self.assertEqual(self.as_(admin, "GET", path).status, 200, path)

    def test_limits_are_changed_by_admins_and_read_by_all(self):
        # API.md: "everything that changes a queue, a limit or a schedule is admin"; reads
        # are producer/worker/admin. Snooze is a worker's report, as fail is.
        key = "/limits/" + self.q + "%2Fk%3A1"
        for role, token in (("producer", PRODUCER), ("worker", WORKER)):
            self.assert_403(self.as_(token, "PUT", key, {"max_running": 1}), role)
        r = self.as_(ADMIN, "PUT", key, {"max_running": 1})
        self.assertEqual((r.status, r.json.get("key")), (200, self.q + "/k:1"), r)
        for token in (PRODUCER, WORKER, ADMIN):
            self.assertEqual(self.as_(token, "GET", key).status, 200)
            r = self.as_(token, "GET", "/limits")
            self.assertIn(self.q + "/k:1", [l["key"] for l in r.json["limits"]], r)
        for role, token in (("producer", PRODUCER), ("worker", WORKER)):
            self.assert_403(self.as_(token, "DELETE", key), role)
        self.assertEqual(self.as_(ADMIN, "DELETE", key).status, 200)
        self.assert_error(self.as_(ADMIN, "DELETE", key), 404, "not_found")
        self.assert_401(self.c.request("PUT", key, {"max_running": 1}))
        job = self.enqueue_as(PRODUCER)
        j = self.claim_as(WORKER)[0]
        snooze = {"lease_token": j["lease_token"], "seconds": 0}
        self.assert_403(self.as_(PRODUCER, "POST", "/jobs/%d/snooze" % job["id"], snooze),
                        "producer")
        r = self.as_(WORKER, "POST", "/jobs/%d/snooze" % job["id"], snooze)
        self.assertEqual((r.status, r.json.get("status")), (200, "queued"), r)

    def test_long_poll_claim_with_token(self):
        # A parked claim resumes on the same request: the access check is not repeated wrongly.
        r = self.as_(WORKER, "POST", "/claim",
                     {"worker_id": "w", "queue": self.q, "wait_seconds": 1})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["jobs"], [])


class TokensNotLogged(AuthServerTest):
    def test_tokens_never_in_the_log(self):
        job = self.enqueue_as(PRODUCER)
        self.as_(WORKER, "POST", "/jobs", {"payload": 1})  # 403
        self.as_(ADMIN, "POST", "/jobs/%d/cancel" % job["id"])
        for t in (STRANGER, ADMIN2 + "x"):
            self.as_(t, "GET", "/jobs")  # 401
        self.as_(None, "GET", "/jobs", headers={"Authorization": "Basic " + ADMIN})
        self.as_(None, "GET", "/jobs", headers={"Authorization": "Bearer " + ADMIN + " junk"})

        def access_lines():
            with open(self.server.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            return text if text.count(" GET /jobs 401 ") >= 4 else None
        log = wait_until(access_lines, 20, what="the access-log lines")
        self.assertIn("authentication on: 4 bearer tokens (1 producer, 1 worker, 2 admin)", log)
        self.assertIn(" POST /jobs 403 ", log)
        for t in ALL_TOKENS:
            self.assertNotIn(t, log)
            self.assertNotIn(t[-20:], log)


class Startup(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="jobq-auth-start-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.db = os.path.join(self.tmp, "jobq.db")

    def spawn(self, args, env=None):
        s = Spawned(args, env)
        self.addCleanup(s.cleanup)
        return s

    def test_non_loopback_without_tokens_refuses_to_start(self):
        for listen in ("0.0.0.0:0", "[::]:0"):
            code, out = run_to_exit(["--listen", listen, "--db", self.db])
            self.assertNotEqual(code, 0, out)
            self.assertIn("not a loopback address", out)
            self.assertIn("--auth-token-file", out)
            self.assertIn("--insecure-listen-any", out)
        code, out = run_to_exit(["--db", self.db], env={"JOBQ_LISTEN": "0.0.0.0:0",
                                                          "JOBQ_INSECURE_LISTEN_ANY": "0"})
        self.assertNotEqual(code, 0, out)
        self.assertIn("not a loopback address", out)

    def test_insecure_listen_any_starts_open_and_says_so(self):
        for args, env in ((["--listen", "0.0.0.0:0", "--insecure-listen-any"], None),
                          (["--listen", "0.0.0.0:0"], {"JOBQ_INSECURE_LISTEN_ANY": "1"})):
            s = self.spawn(args, env)
            port = s.wait_listening()
            c = Client(port, timeout=10)  # connects to 127.0.0.1: 0.0.0.0 takes it
            try:
                self.assertEqual(c.get("/healthz").status, 200)
                r = c.post("/jobs", {"payload": 1})
                self.assertEqual(r.status, 201, r)  # open: no token needed
            finally:
                c.close()
            self.assertIn("AUTHENTICATION IS OFF", s.text())
            self.assertEqual(s.stop(), 0, s.text())

    def test_non_loopback_with_tokens_starts(self):
        path = token_file(self.tmp, "%s admin\n" % ADMIN)
        s = self.spawn(["--listen", "0.0.0.0:0"], {"JOBQ_AUTH_TOKEN_FILE": path})
        port = s.wait_listening()
        c = Client(port, timeout=10)
        try:
            self.assertEqual(c.get("/jobs").status, 401)
            self.assertEqual(c.get("/jobs", headers=bearer(ADMIN)).status, 200)
        finally:
            c.close()
        self.assertIn("authentication on: 1 bearer token (0 producer, 0 worker, 1 admin)",
                      s.text())
        self.assertNotIn("AUTHENTICATION IS OFF", s.text())
        self.assertEqual(s.stop(), 0, s.text())

    def test_default_is_open_on_loopback_and_loud_about_it(self):
        srv = Server()
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client()
        try:
            self.assertEqual(c.post("/jobs", {"payload": 1}).status, 201)
            self.assertEqual(c.get("/jobs").status, 200)
        finally:
            c.close()
        srv.stop_checked()
        with open(srv.log_path, "rb") as f:
            self.assertIn(b"AUTHENTICATION IS OFF", f.read())

    def test_bad_token_files_refuse_to_start(self):
        secret = make_token("secret")
        cases = (
            ("%s producer\n%s\n" % (ADMIN, secret), "line 2"),
            ("# c\n\n%s superuser\n" % secret, "line 3"),
            ("%s admin\n%s worker\n" % (secret, secret), "line 2"),
            ("%s producer extra\n" % secret, "line 1"),
            ("admin %s\n" % secret, "line 1"),
            ("# nothing\n", "no tokens"),
        )
        for text, where in cases:
            with self.subTest(where=where):
                path = token_file(self.tmp, text)
                code, out = run_to_exit(["--listen", "127.0.0.1:0", "--db", self.db,
                                         "--auth-token-file", path])
                self.assertNotEqual(code, 0, out)
                self.assertIn(where, out)
                self.assertIn(path, out)
                self.assertNotIn(secret, out)
                self.assertNotIn(ADMIN, out)
        code, out = run_to_exit(["--listen", "127.0.0.1:0", "--db", self.db,
                                 "--auth-token-file", os.path.join(self.tmp, "missing")])
        self.assertNotEqual(code, 0, out)
        self.assertIn("cannot read the token file", out)

    def test_token_file_from_environment(self):
        path = token_file(self.tmp, "%s worker\n" % WORKER)
        srv = Server(env={"JOBQ_AUTH_TOKEN_FILE": path})
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client()
        try:
            r = c.get("/queues")
            self.assertEqual(r.status, 401, r)
            self.assertEqual(r.header("www-authenticate"), CHALLENGE)
            self.assertEqual(c.get("/queues", headers=bearer(WORKER)).status, 200)
            self.assertEqual(c.post("/jobs", {"payload": 1}, headers=bearer(WORKER)).status, 403)
        finally:
            c.close()
        srv.stop_checked()


if __name__ == "__main__":
    unittest.main()
