"""Worker failures, with real worker processes where a process is what fails:

- a worker killed with SIGKILL while it holds a lease: the sweeper puts the job back in the
  queue when the lease expires (error_code "lease_expired", the attempt counted, progress
  kept) and a second worker completes it;
- a worker that hangs, heartbeating past max_runtime_seconds: the heartbeats answer 409
  lease_lost from claimed_at + max_runtime_seconds on, the sweeper requeues the job with
  error_code "timeout", and with its attempts used up the job ends failed;
- a worker whose connection drops after its complete was applied but before it read the
  answer: the same complete, retried on a new connection with the same token, answers 200
  with the same result, and the job succeeded once.

Run as `python3 test_worker_failure.py worker MODE PORT QUEUE NAME LEASE INTERVAL`, this file
is the worker process (see worker_main); unittest imports it as the tests.
"""

import http.client
import json
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

from harness import HOST, ServerTest, read_response, wait_until

WORKER_LIFETIME = 60.0  # a worker process exits by itself after this long, whatever happens
EVENT_TIMEOUT = 20.0    # deadline for one line from a worker process


def worker_main(argv):
    """A worker process. MODE "hold": claim one job and heartbeat it every INTERVAL seconds
    (progress {"step": n}) until killed, printing every answer, and keep heartbeating after
    a 409 (a hung worker that does not notice). MODE "finish": claim one job, complete it
    with result {"by": NAME}, print the answer and exit. One JSON line per event on stdout."""
    mode, port, q, name, lease, interval = argv[0], int(argv[1]), argv[2], argv[3], \
        int(argv[4]), float(argv[5])
    conn = http.client.HTTPConnection(HOST, port, timeout=30)

    def call(path, body):
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read().decode() or "null")

    def say(**kw):
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    deadline = time.monotonic() + WORKER_LIFETIME
    job = None
    while job is None and time.monotonic() < deadline:
        st, js = call("/claim", {"worker_id": name, "queue": q, "lease_seconds": lease,
                                 "wait_seconds": 2})
        if st != 200:
            say(event="error", status=st, body=js)
            return 1
        if js["jobs"]:
            job = js["jobs"][0]
    if job is None:
        say(event="no_job")
        return 1
    say(event="claimed", job=job)
    path = "/jobs/%d/" % job["id"]
    if mode == "finish":
        st, js = call(path + "complete", {"lease_token": job["lease_token"],
                                          "result": {"by": name}})
        say(event="completed", status=st, body=js)
        return 0 if st == 200 else 1
    n = 0
    while time.monotonic() < deadline:
        n += 1
        sent = time.time()
        st, js = call(path + "heartbeat", {"lease_token": job["lease_token"],
                                           "progress": {"step": n}})
        code = js["error"]["code"] if st != 200 and isinstance(js, dict) and \
            isinstance(js.get("error"), dict) else None
        say(event="beat", n=n, status=st, code=code, sent=sent, recv=time.time())
        time.sleep(interval)
    return 0


class WorkerProcess:
    """A worker_main() process; its stdout lines arrive, parsed, in a queue."""

    def __init__(self, testcase, mode, port, q, name, lease, interval=0.25):
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "worker", mode, str(port), q, name, str(lease),
             str(interval)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        testcase.addCleanup(self.kill)
        self.events = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.events.put(json.loads(line.decode()))
        self.events.put(None)

    def next(self, what, timeout=EVENT_TIMEOUT):
        try:
            ev = self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("%s: no %s within %.0fs" % (self.name, what, timeout))
        if ev is None:
            raise AssertionError("%s exited (%r) before %s" % (self.name, self.proc.wait(5),
                                                                what))
        return ev

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.reader.join(10)


class WorkerFailure(ServerTest):
    server_args = ("--sweep-interval", "1", "--backoff-base", "1", "--backoff-max", "1")

    def worker(self, mode, name, lease, interval=0.25):
        return WorkerProcess(self, mode, self.server.port, self.q, name, lease, interval)

    def wait_status(self, job_id, not_status, what, timeout=15):
        return wait_until(
            lambda: (lambda g: g if g["status"] != not_status else None)(self.get_job(job_id)),
            timeout, 0.1, what)

    def test_worker_killed_mid_job_is_requeued_and_finished_by_another(self):
        j = self.enqueue({"work": "resize", "n": 7}, max_attempts=3)
        a = self.worker("hold", "doomed", lease=2, interval=0.3)
        claimed = a.next("claim")
        self.assertEqual(claimed["event"], "claimed", claimed)
        self.assertEqual(claimed["job"]["id"], j["id"])
        token_a = claimed["job"]["lease_token"]
        for i in range(3):  # it holds the lease, heartbeating, before it dies
            beat = a.next("heartbeat %d" % (i + 1))
            self.assertEqual(beat["status"], 200, beat)
        g = self.get_job(j["id"])
        self.assertEqual((g["status"], g["worker_id"], g["attempts"]), ("running", "doomed", 1))
        a.kill()
        self.assertEqual(a.proc.returncode, -signal.SIGKILL)
        step = self.get_job(j["id"])["progress"]["step"]
        self.assertGreaterEqual(step, 3)
        # Within lease (2 s) + one sweep interval (1 s) of the last heartbeat, plus slack.
        g = self.wait_status(j["id"], "running", "the sweeper to requeue the dead worker's job")
        self.assertEqual(g["status"], "queued", g)
        self.assertEqual(g["error_code"], "lease_expired")
        self.assertEqual(g["attempts"], 1)
        self.assertEqual(g["progress"], {"step": step}, "progress must survive the requeue")
        r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": token_a})
        self.assert_error(r, 409, "lease_lost")

        b = self.worker("finish", "rescuer", lease=30)
        claimed_b = b.next("claim")
        self.assertEqual(claimed_b["event"], "claimed", claimed_b)
        self.assertEqual(claimed_b["job"]["id"], j["id"])
        self.assertEqual(claimed_b["job"]["attempts"], 2)
        self.assertEqual(claimed_b["job"]["progress"], {"step": step})
        self.assertGreater(claimed_b["job"]["fencing_token"], claimed["job"]["fencing_token"])
        done = b.next("complete")
        self.assertEqual((done["event"], done["status"]), ("completed", 200), done)
        self.assertEqual(b.proc.wait(timeout=10), 0)
        g = self.get_job(j["id"])
        self.assertEqual(g["status"], "succeeded")
        self.assertEqual(g["result"], {"by": "rescuer"})
        self.assertEqual(g["attempts"], 2)
        self.assertEqual(g["worker_id"], "rescuer")
        self.assertEqual(g["payload"], {"work": "resize", "n": 7})
        r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": token_a, "result": 1})
        self.assert_error(r, 409, "lease_lost")

    def hang_past_max_runtime(self, name, job_id, max_runtime):
        """Start a hung worker on the job; check its heartbeats: 200 before claimed_at +
        max_runtime, 409 lease_lost from then on. Returns the process and its claim."""
        w = self.worker("hold", name, lease=60, interval=0.25)
        claimed = w.next("claim")
        self.assertEqual(claimed["event"], "claimed", claimed)
        job = claimed["job"]
        self.assertEqual(job["id"], job_id)
        end = job["claimed_at"] + max_runtime
        ok = 0
        for _ in range(200):
            beat = w.next("heartbeat")
            if beat["status"] == 200:
                ok += 1
                self.assertLess(beat["sent"], end, "heartbeat answered 200 past max runtime")
                continue
            self.assertEqual((beat["status"], beat["code"]), (409, "lease_lost"), beat)
            self.assertGreaterEqual(beat["recv"], end, "lease_lost before max runtime")
            break
        else:
            self.fail("heartbeats never hit max_runtime_seconds")
        self.assertGreater(ok, 0, "no heartbeat was accepted within the max runtime")
        for _ in range(2):  # the hung worker goes on: lease_lost every time
            beat = w.next("heartbeat")
            self.assertEqual((beat["status"], beat["code"]), (409, "lease_lost"), beat)
        return w, job

    def test_hung_worker_times_out_then_fails_when_attempts_exhausted(self):
        j = self.enqueue({"work": "hang"}, max_runtime_seconds=2, max_attempts=2)
        a, claim_a = self.hang_past_max_runtime("hung-a", j["id"], 2)
        g = self.wait_status(j["id"], "running", "the sweeper to time the job out")
        self.assertEqual((g["status"], g["error_code"], g["attempts"]), ("queued", "timeout", 1),
                         g)
        self.assertIsNone(g["finished_at"])

        b, claim_b = self.hang_past_max_runtime("hung-b", j["id"], 2)
        self.assertEqual(claim_b["attempts"], 2)
        self.assertGreater(claim_b["fencing_token"], claim_a["fencing_token"])
        g = self.wait_status(j["id"], "running", "the sweeper to fail the job")
        self.assertEqual((g["status"], g["error_code"], g["attempts"]), ("failed", "timeout", 2),
                         g)
        self.assertIsNotNone(g["finished_at"])
        # Both hung workers are still beating, and still lose; the job stays failed.
        for w in (a, b):
            beat = w.next("heartbeat")
            self.assertEqual((beat["status"], beat["code"]), (409, "lease_lost"), beat)
        for w, c in ((a, claim_a), (b, claim_b)):
            w.kill()
            r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": c["lease_token"]})
            self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"])["status"], "failed")

    def complete_request(self, job_id, token, result):
        body = json.dumps({"lease_token": token, "result": result}).encode()
        return (b"POST /jobs/%d/complete HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: "
                b"application/json\r\nContent-Length: %d\r\n\r\n"
                % (job_id, HOST.encode(), self.server.port, len(body)) + body)

    def check_succeeded_once(self, j, claim, first, result):
        """After the lost answer: the retry with the same token is 200 with the same
        result and changes nothing; a different result changes nothing either."""
        again = self.act(j["id"], "complete", {"lease_token": claim["lease_token"],
                                               "result": result}).json
        self.assertEqual((again["status"], again["result"]), ("succeeded", result))
        self.assertEqual(again["finished_at"], first["finished_at"])
        other = self.act(j["id"], "complete", {"lease_token": claim["lease_token"],
                                               "result": "different"}).json
        self.assertEqual(other["result"], result)
        g = self.get_job(j["id"])
        self.assertEqual((g["status"], g["result"], g["attempts"], g["fencing_token"]),
                         ("succeeded", result, 1, claim["fencing_token"]))
        self.assertEqual(g["finished_at"], first["finished_at"])
        qs = self.c.get("/queues").json["queues"]
        mine = [x for x in qs if x["name"] == self.q]
        self.assertEqual(len(mine), 1, qs)
        self.assertEqual((mine[0]["succeeded"], mine[0]["running"], mine[0]["queued"]),
                         (1, 0, 0))

    def test_answer_lost_after_complete_applied(self):
        j = self.enqueue({"work": "send"})
        claim = self.claim_one("flaky", lease_seconds=30)
        result = {"message_id": "m-17", "n": [1, 2]}
        sock = socket.create_connection((HOST, self.server.port), timeout=30)
        try:
            sock.sendall(self.complete_request(j["id"], claim["lease_token"], result))
            # The network drops once the complete is applied, before the answer is read.
            first = self.wait_status(j["id"], "running", "the complete to be applied", 10)
        finally:
            # Linger 0: close() resets the connection, the unread answer is thrown away.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        self.assertEqual((first["status"], first["result"]), ("succeeded", result))
        self.check_succeeded_once(j, claim, first, result)

    def test_connection_closed_right_after_sending_complete(self):
        """The worker closes at once: the complete may or may not have been applied; the
        retry with the same token succeeds either way, and the job succeeds once."""
        j = self.enqueue({"work": "send"})
        claim = self.claim_one("flaky", lease_seconds=30)
        result = {"message_id": "m-18"}
        sock = socket.create_connection((HOST, self.server.port), timeout=30)
        sock.sendall(self.complete_request(j["id"], claim["lease_token"], result))
        sock.close()
        first = self.act(j["id"], "complete", {"lease_token": claim["lease_token"],
                                               "result": result}).json
        self.assertEqual((first["status"], first["result"]), ("succeeded", result))
        self.check_succeeded_once(j, claim, first, result)
        # The server is still fine on a new connection that reads its answer.
        s2 = socket.create_connection((HOST, self.server.port), timeout=30)
        try:
            s2.sendall(self.complete_request(j["id"], claim["lease_token"], result))
            r = read_response(s2)
        finally:
            s2.close()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["result"], result)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2:]))
    unittest.main()
