"""The dashboard at /ui/: its headers (Content-Security-Policy, nosniff, content types,
ETag and 304, the /ui redirect, 404 for an unknown file, open without a token), and the page
itself driven in headless Chromium by tests/ui/drive.mjs (playwright-core): jobs appear (live
through the event stream, or polled when the stream is refused), a job opens, a failed job is retried and a queue paused and purged from the page, the limits
(running against the maximum, held jobs, a window's use, a paused key; set, changed and
deleted from the page), the schedules (cron or period, zone, next and last run with its job;
paused and resumed from the page), the server's error messages are shown, the token prompt with authentication on, and phone width.

Screenshots are kept in $JOBQ_ARTIFACTS, else in artifacts/ui/<backend>/ beside jobqd (the
build directory). Chromium ($JOBQ_CHROMIUM, else /usr/bin/chromium), node and tests/ui's
node_modules come from scripts/deps.sh; the browser tests fail, naming it, when one is
missing."""

import http.server
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
from urllib.parse import quote

from harness import ServerTest, backend, free_port, jobqd_path, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER_DIR = os.path.join(HERE, "..", "ui")
DRIVE_TIMEOUT = 240  # seconds for one scenario (Chromium's start included)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
FILES = {
    "/ui/": "text/html; charset=utf-8",
    "/ui/app.js": "text/javascript; charset=utf-8",
    "/ui/api.js": "text/javascript; charset=utf-8",
    "/ui/chart.js": "text/javascript; charset=utf-8",
    "/ui/dom.js": "text/javascript; charset=utf-8",
    "/ui/jobs.js": "text/javascript; charset=utf-8",
    "/ui/live.js": "text/javascript; charset=utf-8",
    "/ui/limits.js": "text/javascript; charset=utf-8",
    "/ui/schedules.js": "text/javascript; charset=utf-8",
    "/ui/webhooks.js": "text/javascript; charset=utf-8",
    "/ui/app.css": "text/css; charset=utf-8",
}


def artifacts_dir():
    d = os.environ.get("JOBQ_ARTIFACTS")
    if d:
        return os.path.join(d, "ui", backend())
    return os.path.join(os.path.dirname(os.path.abspath(jobqd_path())), "artifacts", "ui",
                        backend())


class UiHeaders(ServerTest):
    def test_files_carry_strict_headers(self):
        for path, ctype in FILES.items():
            r = self.c.get(path)
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.header("content-type"), ctype, path)
            self.assertEqual(r.header("content-security-policy"), CSP, path)
            self.assertEqual(r.header("x-content-type-options"), "nosniff", path)
            self.assertEqual(r.header("cache-control"), "no-cache", path)
            self.assertEqual(r.header("referrer-policy"), "no-referrer", path)
            self.assertRegex(r.header("etag", ""), r'^"[0-9a-f]{16}"$', path)
            self.assertEqual(int(r.header("content-length")), len(r.body), path)
            self.assertTrue(r.body, path)
        page = self.c.get("/ui/").body.decode("utf-8")
        self.assertTrue(page.startswith("<!doctype html>"), page[:40])
        self.assertNotIn("<style", page)
        self.assertNotIn(" style=", page)
        self.assertNotIn("<script>", page)  # every script has a src: the CSP allows no other

    def test_etag_answers_304(self):
        for path in FILES:
            etag = self.c.get(path).header("etag")
            for inm in (etag, "W/" + etag, '"other", ' + etag, "*"):
                r = self.c.get(path, headers={"If-None-Match": inm})
                self.assertEqual(r.status, 304, (path, inm, r))
                self.assertEqual(r.body, b"")
                self.assertEqual(r.header("etag"), etag)
                self.assertEqual(r.header("content-security-policy"), CSP)
            r = self.c.get(path, headers={"If-None-Match": '"0000000000000000"'})
            self.assertEqual(r.status, 200, (path, r))
        self.assertNotEqual(self.c.get("/ui/").header("etag"), self.c.get("/ui/app.js").header("etag"))

    def test_redirect(self):
        for path in ("/ui", "/ui?x=1"):
            r = self.c.get(path)
            self.assertEqual(r.status, 308, r)
            self.assertEqual(r.header("location"), "/ui/")
            self.assertEqual(r.header("x-content-type-options"), "nosniff")

    def test_unknown_paths_and_methods(self):
        for path in ("/ui/nope.js", "/ui/index.html", "/ui/app.js/", "/ui//", "/ui/APP.JS",
                     "/ui/../jobs", "/ui/app.js%00", "/uix"):
            self.assert_error(self.c.get(path), 404, "not_found")
        for method in ("POST", "PUT", "DELETE"):
            r = self.c.request(method, "/ui/")
            self.assert_error(r, 405, "method_not_allowed")
            self.assertEqual(r.header("allow"), "GET")


class AuthServer(ServerTest):
    """A server with --auth-token-file: an admin and a producer token."""

    @classmethod
    def setUpClass(cls):
        tokdir = tempfile.mkdtemp(prefix="jobq-ui-tokens-")
        cls.addClassCleanup(shutil.rmtree, tokdir, ignore_errors=True)  # also if start fails
        cls.admin = "admin-" + secrets.token_urlsafe(24)
        cls.producer = "producer-" + secrets.token_urlsafe(24)
        path = os.path.join(tokdir, "tokens")
        with open(path, "w") as f:
            f.write("%s admin\n%s producer\n" % (cls.admin, cls.producer))
        os.chmod(path, 0o600)
        cls.server_args = ("--auth-token-file", path)
        super().setUpClass()


class UiAuthHeaders(AuthServer):
    """With authentication on, the files are open (they hold no data); the API is not."""

    def test_files_open_api_closed(self):
        for path in FILES:
            r = self.c.get(path)
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.header("content-security-policy"), CSP)
        self.assertEqual(self.c.get("/ui").status, 308)
        self.assert_error(self.c.get("/queues"), 401, "unauthorized")
        # As for any path that is not an open route: a stranger learns nothing (access.h).
        self.assert_error(self.c.get("/ui/nope.js"), 401, "unauthorized")
        r = self.c.get("/ui/nope.js", headers={"Authorization": "Bearer " + self.producer})
        self.assert_error(r, 404, "not_found")


class Browser:
    """Runs one drive.mjs scenario against a server; fails with its output when it fails."""

    def drive(self, scenario, **args):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is missing: run scripts/deps.sh")
        self.assertTrue(os.path.isdir(os.path.join(DRIVER_DIR, "node_modules", "playwright-core")),
                        "tests/ui/node_modules is missing: run scripts/deps.sh")
        out_dir = artifacts_dir()
        os.makedirs(out_dir, exist_ok=True)
        env = dict(os.environ, CI="true")
        p = subprocess.run(
            [node, "drive.mjs", scenario, "http://127.0.0.1:%d" % self.server.port, out_dir,
             json.dumps(args)],
            cwd=DRIVER_DIR, stdin=subprocess.DEVNULL, capture_output=True, env=env,
            timeout=DRIVE_TIMEOUT)
        output = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "drive.mjs %s failed (screenshots in %s):\n%s"
                         % (scenario, out_dir, output))

    def failed_job(self, queue, token=None):
        """A job of `queue` that failed for good (error_code boom). Returns its id."""
        hdrs = {"Authorization": "Bearer " + token} if token else None
        r = self.c.post("/jobs", {"queue": queue, "payload": {"kind": "fails"},
                                  "max_attempts": 1}, headers=hdrs)
        self.assertEqual(r.status, 201, r)
        r = self.c.post("/claim", {"worker_id": "ui-test", "queue": queue}, headers=hdrs)
        self.assertEqual(len(r.json["jobs"]), 1, r)
        j = r.json["jobs"][0]
        r = self.c.post("/jobs/%d/fail" % j["id"], {
            "lease_token": j["lease_token"], "error_code": "boom",
            "error_detail": "the disk is full", "retry": False}, headers=hdrs)
        self.assertEqual(r.json["status"], "failed", r)
        return j["id"]


class UiBrowser(ServerTest, Browser):
    def test_jobs_detail_retry_pause_purge(self):
        failed = self.failed_job(self.q)  # first: a claim takes the oldest job
        ids = [self.enqueue({"n": i})["id"] for i in range(30)]
        paused = self.queue("paused")
        for _ in range(2):
            self.enqueue({"done": True}, queue=paused)
            j = self.claim_one(queue=paused)
            self.act(j["id"], "complete", {"lease_token": j["lease_token"], "result": {"ok": 1}})
        self.enqueue({"waits": True}, queue=paused)
        attempts = self.c.get("/jobs/%d/attempts" % failed).status == 200
        self.drive("main", queue=self.q, jobs=ids[:3], failed=failed, pause=paused,
                   succeeded=2, attempts=attempts)
        self.assertEqual(self.get_job(failed)["status"], "queued")
        rows = {q["name"]: q for q in self.c.get("/queues").json["queues"]}
        self.assertIs(rows[paused].get("paused"), True, rows[paused])
        self.assertEqual(rows[paused]["succeeded"], 0, rows[paused])
        self.assertEqual(rows[paused]["queued"], 1, rows[paused])

    def test_limits(self):
        q = self.q
        exact, rated, pattern = q + ":solo", q + ":api", q + ":cust:*"
        for key, body in ((exact, {"max_running": 1}),
                          (rated, {"rate": {"jobs": 5, "per_seconds": 3600}}),
                          (pattern, {"max_running": 1})):
            self.assertEqual(self.c.request("PUT", "/limits/" + quote(key, safe=""), body).status,
                             200)
        # Three customers of the pattern run one job each (its maximum per key); the second
        # job of customer 2 is held.
        custs = [q + ":cust:%d" % i for i in (1, 2, 3, 2)]
        for key in [exact, exact, exact, rated, rated] + custs:
            self.enqueue({"k": key}, concurrency_key=key)
        got = self.claim("w1", max_jobs=10, expect=6)
        self.claim("w1", max_jobs=10, expect=0)  # passes the full key by: its jobs are held
        cust = [j for j in got if j["concurrency_key"] == q + ":cust:1"][0]
        self.act(cust["id"], "snooze", {"lease_token": cust["lease_token"], "seconds": 600,
                                        "pause_key": True})
        added = q + ":new"
        self.drive("limits", exact=exact, rated=rated, pattern=pattern, added=added)
        self.assertEqual(self.c.get("/limits/" + quote(added, safe="")).status, 404)
        self.assertEqual(self.c.get("/limits/" + quote(exact, safe="")).json["max_running"], 2)

    def test_schedules(self):
        cron, every = self.q + ".weekly", self.q + ".second"
        r = self.c.request("PUT", "/schedules/" + cron,
                           {"cron": "0 9 * * MON", "timezone": "Europe/Berlin",
                            "job": {"queue": self.q, "payload": 1}})
        self.assertEqual(r.status, 200, r)
        r = self.c.request("PUT", "/schedules/" + every,
                           {"every_seconds": 1, "job": {"queue": self.q, "payload": 2}})
        self.assertEqual(r.status, 200, r)
        wait_until(lambda: self.c.get("/schedules/" + every).json["last_job_id"], 10,
                   what="a first tick")
        self.drive("schedules", cron=cron, every=every)
        s = self.c.get("/schedules/" + every).json
        self.assertFalse(s["paused"], s)
        self.assertEqual(s["every_seconds"], 1)
        for n in (cron, every):
            self.assertEqual(self.c.request("DELETE", "/schedules/" + n).status, 200)

    def test_workflow(self):
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": {"step": "top"}, "ref": "top"},
            {"queue": self.q, "payload": {"step": "left"}, "ref": "l", "depends_on": ["top"]},
            {"queue": self.q, "payload": {"step": "right"}, "ref": "r", "depends_on": ["top"]},
            {"queue": self.q, "payload": {"step": "bottom"}, "ref": "b",
             "depends_on": ["l", "r"]},
            {"queue": self.q, "payload": {"step": "notify"}, "depends_on": ["b"],
             "on_dependency_failure": "run"}]})
        self.assertEqual(r.status, 201, r)
        top, left, right, bottom, callback = [j["id"] for j in r.json["jobs"]]
        for want in (top, left):
            j = self.claim_one()
            self.assertEqual(j["id"], want)
            self.act(want, "complete", {"lease_token": j["lease_token"]})
        self.assertEqual(self.claim_one()["id"], right)  # left running
        self.drive("workflow", queue=self.q, left=left, right=right, bottom=bottom,
                   callback=callback)

    def test_live_updates_through_the_event_stream(self):
        self.enqueue({"n": 1})
        self.drive("live", queue=self.q)

    def test_phone_width(self):
        self.enqueue({"n": 1})
        job = self.enqueue({"text": "a long payload line " * 20})["id"]
        self.drive("phone", queue=self.q, job=job)

    def test_server_errors_shown(self):
        self.enqueue({"n": 1})
        self.drive("errors")


class UiWebhooks(ServerTest, Browser):
    """A receiver that refuses connections: the subscription fails at once."""

    server_args = ("--webhook-allow-private", "--webhook-retry-base", "600")

    def test_webhooks(self):
        failing, disabled = self.q + ".failing", self.q + ".disabled"
        url = "http://127.0.0.1:%d/hook" % free_port()  # nothing listens there
        r = self.c.request("PUT", "/webhooks/" + failing,
                           {"url": url, "types": ["job.created"], "queues": [self.q]})
        self.assertEqual(r.status, 201, r)
        r = self.c.request("PUT", "/webhooks/" + disabled, {"url": url, "enabled": False})
        self.assertEqual(r.status, 201, r)
        self.enqueue()
        wait_until(lambda: self.c.get("/webhooks/" + failing).json["failures"] == 1, 10,
                   what="a failed attempt")
        # A receiver that answers 204: the subscription made with the form delivers to it.
        got = []

        class Hook(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                got.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        try:
            self.drive("webhooks", failing=failing, disabled=disabled, url=url,
                       created=self.q + ".created", queue=self.q,
                       receiver="http://127.0.0.1:%d/hook" % receiver.server_address[1])
        finally:
            receiver.shutdown()
            receiver.server_close()
        self.assertTrue(got, "the form's subscription delivered nothing")
        self.assertEqual(self.c.get("/webhooks/" + self.q + ".created").status, 404)
        for n in (failing, disabled):
            self.assertEqual(self.c.request("DELETE", "/webhooks/" + n).status, 200)


class UiBrowserAuth(AuthServer, Browser):
    def test_token_prompt(self):
        failed = self.failed_job(self.q, token=self.admin)
        self.drive("auth", failed=failed, admin=self.admin, producer=self.producer)
        r = self.c.get("/jobs/%d" % failed, headers={"Authorization": "Bearer " + self.admin})
        self.assertEqual(r.json["status"], "queued", r)
