"""The client examples in examples/ (Python, Node.js, POSIX shell) against a live jobqd.

For each language: its producer enqueues jobs and its worker runs them all to `succeeded`
with the right result (and fails a bad one with error_code "work_error"); heartbeats keep a
job alive past its lease; a lease lost on a heartbeat (the test cancels the running job) or
on complete (heartbeats turned off, the lease runs out) makes the worker drop that job and
carry on with the next; and a complete whose answer is lost on the way back (a proxy here
drops it) is retried with the same token and answered 200.

The examples run as subprocesses, each with a time-out. A language whose runtime is missing
is skipped with the reason (scripts/deps.sh installs node, curl and jq, so CI runs all).
"""

import os
import shutil
import socket
import subprocess
import threading
import time
import unittest
import http.client

from harness import HOST, ServerTest, wait_until

EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "..", "..", "examples"))
RUN_TIMEOUT = 30  # seconds for one example process


class DropCompleteProxy:
    """A loopback HTTP proxy in front of jobqd, one request per connection. The first
    `drops` POST .../complete requests are forwarded (the server applies them) but the
    connection is then closed without an answer: the worker sees a network error."""

    def __init__(self, port, drops=1):
        self.port = port
        self.drops = drops
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.url = "http://%s:%d" % (HOST, self.sock.getsockname()[1])
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        self.sock.close()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(RUN_TIMEOUT)
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, body = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
            headers = {k.strip().lower(): v.strip() for k, v in headers.items()}
            n = int(headers.get("content-length", "0"))
            while len(body) < n:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            up = http.client.HTTPConnection(HOST, self.port, timeout=RUN_TIMEOUT)
            fwd = {k: v for k, v in headers.items()
                   if k in ("content-type", "authorization")}
            up.request(method, path, body=body[:n] or None, headers=fwd)
            resp = up.getresponse()
            data = resp.read()
            up.close()
            if method == "POST" and path.endswith("/complete") and self.drops > 0:
                self.drops -= 1
                return  # the server did it; the answer is lost
            conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                         % (resp.status, resp.reason.encode(), len(data)) + data)
        except OSError:
            pass
        finally:
            conn.close()


class ExamplesMixin:
    """The tests, for one language: `needs` (programs on PATH), `producer` and `worker`
    (argv before the arguments)."""

    server_args = ("--sweep-interval", "1")
    needs = ()
    producer = ()
    worker = ()

    def setUp(self):
        missing = [p for p in self.needs if shutil.which(p) is None]
        if missing:
            self.skipTest("%s not installed (scripts/deps.sh installs it)" % ", ".join(missing))
        super().setUp()

    def env(self, url=None, **settings):
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        env.update(JOBQ_URL=url or "http://%s:%d" % (HOST, self.server.port),
                   JOBQ_WAIT_SECONDS="1", JOBQ_LEASE_SECONDS="10")
        env.update({k: str(v) for k, v in settings.items()})
        return env

    def run_example(self, argv, env):
        """Run an example to its end (bounded); returns (stdout, stderr) after checking 0."""
        p = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=RUN_TIMEOUT, env=env, cwd=EXAMPLES)
        self.assertEqual(p.returncode, 0, "%s exited %d\n--- stdout ---\n%s\n--- stderr ---\n%s"
                         % (" ".join(argv), p.returncode, p.stdout, p.stderr))
        return p.stdout, p.stderr

    def produce(self, count, payload=None):
        argv = list(self.producer) + [self.q, str(count)] + ([payload] if payload else [])
        out, _ = self.run_example(argv, self.env())
        ids = [int(line) for line in out.split()]
        self.assertEqual(len(ids), count, out)
        return ids

    def work(self, max_jobs, url=None, **settings):
        argv = list(self.worker) + [self.q, str(max_jobs)]
        return self.run_example(argv, self.env(url, **settings))[1]

    def test_produce_then_work(self):
        ids = self.produce(5)
        bad = self.enqueue({"n": "x"}, max_attempts=1)["id"]
        log = self.work(6)
        for i, job_id in enumerate(ids, 1):
            j = self.get_job(job_id)
            self.assertEqual(j["payload"], {"n": i})
            self.assertEqual((j["status"], j["result"], j["attempts"]),
                             ("succeeded", {"doubled": 2 * i}, 1), log)
        j = self.get_job(bad)
        self.assertEqual((j["status"], j["error_code"]), ("failed", "work_error"), log)
        self.assertIn("not a number", j["error_detail"])

    def test_heartbeats_keep_a_job_past_its_lease(self):
        # Leases are whole seconds (live while now < lease_expires_at): a 3 s lease is live
        # for at least 2 s after each heartbeat, sent every second.
        job_id, = self.produce(1, '{"n": 4, "sleep": 4}')
        started = time.monotonic()
        log = self.work(1, JOBQ_LEASE_SECONDS=3)
        self.assertGreaterEqual(time.monotonic() - started, 4)
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["result"], j["attempts"], j["fencing_token"]),
                         ("succeeded", {"doubled": 8}, 1, 1), log)
        self.assertIsNotNone(j["heartbeat_at"], log)

    def test_lease_lost_on_heartbeat_drops_the_job(self):
        long_job = self.enqueue({"n": 1, "sleep": 30}, priority=10)["id"]
        next_job = self.enqueue({"n": 2})["id"]
        argv = list(self.worker) + [self.q, "2"]
        started = time.monotonic()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=EXAMPLES,
                             env=self.env(JOBQ_LEASE_SECONDS=3))
        try:
            wait_until(lambda: self.get_job(long_job)["status"] == "running", 10,
                       what="the worker to claim the long job")
            self.act(long_job, "cancel")  # its lease dies: the next heartbeat gets 409
            out, err = p.communicate(timeout=RUN_TIMEOUT)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, err)
        self.assertLess(time.monotonic() - started, 25, "the worker slept the job out: " + err)
        self.assertIn("job %d: lease lost on heartbeat" % long_job, err)
        j = self.get_job(long_job)
        self.assertEqual((j["status"], j["result"]), ("cancelled", None), err)
        j = self.get_job(next_job)
        self.assertEqual((j["status"], j["result"]), ("succeeded", {"doubled": 4}), err)

    def test_lease_lost_on_complete_drops_the_job(self):
        late = self.enqueue({"n": 1, "sleep": 4}, priority=10, max_attempts=1)["id"]
        next_job = self.enqueue({"n": 3})["id"]
        log = self.work(2, JOBQ_LEASE_SECONDS=3, JOBQ_HEARTBEAT=0)
        self.assertIn("job %d: lease lost on complete" % late, log)
        j = wait_until(lambda: (lambda j: j["status"] != "running" and j)(self.get_job(late)),
                       10, what="the sweeper to end the expired job")
        self.assertEqual((j["status"], j["error_code"], j["result"]),
                         ("failed", "lease_expired", None), log)
        j = self.get_job(next_job)
        self.assertEqual((j["status"], j["result"]), ("succeeded", {"doubled": 6}), log)

    def test_complete_retried_after_a_lost_answer(self):
        job_id, = self.produce(1, '{"n": 21}')
        proxy = DropCompleteProxy(self.server.port)
        self.addCleanup(proxy.close)
        log = self.work(1, url=proxy.url)
        self.assertEqual(proxy.drops, 0, log)
        self.assertIn("job %d: complete failed" % job_id, log)
        self.assertIn("retry 1 with the same token", log)
        self.assertIn("job %d: completed" % job_id, log)
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["result"], j["attempts"]),
                         ("succeeded", {"doubled": 42}, 1), log)


class TestPythonExamples(ExamplesMixin, ServerTest):
    needs = ("python3",)
    producer = ("python3", "python/producer.py")
    worker = ("python3", "python/worker.py")


class TestNodeExamples(ExamplesMixin, ServerTest):
    needs = ("node",)
    producer = ("node", "node/producer.mjs")
    worker = ("node", "node/worker.mjs")


class TestShellExamples(ExamplesMixin, ServerTest):
    needs = ("sh", "curl", "jq")
    producer = ("sh", "shell/producer.sh")
    worker = ("sh", "shell/worker.sh")


if __name__ == "__main__":
    unittest.main()
