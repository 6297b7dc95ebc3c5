#!/usr/bin/env python3
"""jobq worker: claim jobs from QUEUE with a long poll, run them, complete them.

    python3 worker.py QUEUE [MAX_JOBS]

The job: sleep payload.sleep seconds (default 0), then answer {"doubled": 2 * payload.n}.
A payload whose n is not a number fails the job with error_code "work_error".

Leases, done right:
- a background thread heartbeats every lease/3 seconds while the job runs;
- a 409 lease_lost (on a heartbeat or on complete) means the job is someone else's now:
  stop working on it and drop it, never complete it;
- complete (and fail) are retried after a network error or a 5xx, a few times with backoff,
  with the same lease_token: if the first answer was lost, the server answers the repeat 200.

Settings (environment): JOBQ_URL (default http://127.0.0.1:8080), JOBQ_TOKEN (bearer token),
JOBQ_LEASE_SECONDS (30), JOBQ_WAIT_SECONDS (long poll, 20), JOBQ_IDLE_POLLS (exit after this
many empty polls in a row; 0 = never), JOBQ_HEARTBEAT (1; 0 turns heartbeats off, to show a
lease being lost). Exits after MAX_JOBS jobs (0 = no limit), or on SIGTERM/SIGINT (after the
job in hand). Python standard library only.
"""

import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

URL = os.environ.get("JOBQ_URL", "http://127.0.0.1:8080").rstrip("/")
TOKEN = os.environ.get("JOBQ_TOKEN")
LEASE = int(os.environ.get("JOBQ_LEASE_SECONDS", "30"))
WAIT = int(os.environ.get("JOBQ_WAIT_SECONDS", "20"))
IDLE_POLLS = int(os.environ.get("JOBQ_IDLE_POLLS", "0"))
HEARTBEAT = os.environ.get("JOBQ_HEARTBEAT", "1") != "0"
WORKER_ID = "py-%s-%d" % (socket.gethostname(), os.getpid())
RETRIES = 5  # tries of complete/fail before giving up (the lease then expires: redelivery)


def log(msg):
    print("worker: " + msg, file=sys.stderr, flush=True)


def post(path, body, timeout):
    """POST body as JSON; returns (status, parsed answer). Network errors raise OSError."""
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if TOKEN:
        req.add_header("Authorization", "Bearer " + TOKEN)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class LeaseLost(Exception):
    pass


class Heartbeat(threading.Thread):
    """Extends the job's lease every lease/3 seconds until stop(); sets `lost` on a 409."""

    def __init__(self, job):
        super().__init__(daemon=True)
        self.job = job
        self.lost = threading.Event()
        self.done = threading.Event()

    def run(self):
        every = LEASE / 3.0
        path = "/jobs/%d/heartbeat" % self.job["id"]
        while not self.done.wait(every):
            try:
                status, body = post(path, {"lease_token": self.job["lease_token"]}, every)
            except OSError as e:
                log("job %d: heartbeat failed (%s), trying again" % (self.job["id"], e))
                continue
            if status == 409:
                log("job %d: lease lost on heartbeat, dropping it" % self.job["id"])
                self.lost.set()
                return
            if status != 200:
                log("job %d: heartbeat answered %d %s" % (self.job["id"], status, body))

    def stop(self):
        self.done.set()
        self.join()


def work(payload, lost):
    """The job itself. Raises LeaseLost as soon as `lost` is set (we must stop)."""
    if lost.wait(float(payload.get("sleep", 0))):
        raise LeaseLost()
    n = payload.get("n")
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise ValueError("payload.n is not a number: %r" % (n,))
    return {"doubled": n * 2}


def finish(job, action, body):
    """POST /jobs/{id}/complete or /fail with the job's lease_token, retrying network errors
    and 5xx with backoff, same token every time. Returns True when the server took it."""
    path = "/jobs/%d/%s" % (job["id"], action)
    body = dict(body, lease_token=job["lease_token"])
    delay = 0.5
    for attempt in range(1, RETRIES + 1):
        try:
            status, answer = post(path, body, 10)
        except OSError as e:
            status, answer = None, str(e)
        if status == 200:
            return True
        if status == 409:
            log("job %d: lease lost on %s, dropping it" % (job["id"], action))
            return False
        if status is not None and status < 500:
            log("job %d: %s answered %d %s" % (job["id"], action, status, answer))
            return False
        log("job %d: %s failed (%s), retry %d with the same token" % (
            job["id"], action, answer if status is None else status, attempt))
        time.sleep(delay)
        delay *= 2
    log("job %d: gave up on %s; the lease will expire and the job be retried"
        % (job["id"], action))
    return False


def handle(job):
    hb = Heartbeat(job)
    if HEARTBEAT:
        hb.start()
    try:
        result = work(job["payload"] if isinstance(job["payload"], dict) else {}, hb.lost)
    except LeaseLost:
        return
    except Exception as e:  # the job failed: say so, the server decides on a retry
        if HEARTBEAT:
            hb.stop()
        if finish(job, "fail", {"error_code": "work_error", "error_detail": str(e)}):
            log("job %d: failed: %s" % (job["id"], e))
        return
    if HEARTBEAT:
        hb.stop()
    if hb.lost.is_set():
        return
    if finish(job, "complete", {"result": result}):
        log("job %d: completed %s" % (job["id"], json.dumps(result)))


busy = False
stopping = False


def on_signal(signum, frame):
    global stopping
    stopping = True
    if not busy:  # waiting in a long poll: leave now (a claim cut short is simply redelivered)
        raise SystemExit(0)


def main(argv):
    global busy
    if len(argv) not in (1, 2):
        sys.exit("usage: worker.py QUEUE [MAX_JOBS]")
    queue, max_jobs = argv[0], int(argv[1]) if len(argv) == 2 else 0
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    done = idle = 0
    claim = {"worker_id": WORKER_ID, "queue": queue, "lease_seconds": LEASE,
             "wait_seconds": WAIT}
    while not stopping and (max_jobs == 0 or done < max_jobs):
        try:
            status, body = post("/claim", claim, WAIT + 10)
        except OSError as e:
            log("claim failed (%s), trying again in 1s" % e)
            time.sleep(1)
            continue
        if status != 200:
            log("claim answered %d %s, trying again in 1s" % (status, body))
            time.sleep(1)
            continue
        if not body["jobs"]:
            idle += 1
            if IDLE_POLLS and idle >= IDLE_POLLS:
                log("idle, exiting")
                break
            continue
        idle = 0
        busy = True
        handle(body["jobs"][0])
        busy = False
        done += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
