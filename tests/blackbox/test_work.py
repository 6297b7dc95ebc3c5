"""`jobq work -- COMMAND` against a live jobqd: the payload on stdin and the job's variables
in the environment; stdout as the result (JSON or a string); exit N and signal N as
exit_N/signal_N with the tail of stderr; heartbeats that keep a job past its lease; a job
cancelled while it runs has its command's whole process group killed at the next heartbeat;
SIGTERM during a long poll and with a command running (--grace, then fail with retry); and a
jobqd killed and restarted under a running worker. Every wait has a deadline."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from cli_helpers import cli_env
from harness import ServerTest, jobq_cli_path, wait_until

WORKER_TIMEOUT = 40.0  # seconds for one worker process to end on its own


class Worker:
    """A `jobq work` process with its output in files. Ends with stop()/wait(); the test
    kills it at cleanup if it is still running."""

    def __init__(self, test, command, *options, env=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="jobq-work-")
        self.log_path = os.path.join(self.tmp.name, "stderr")
        self.log = open(self.log_path, "wb")
        argv = [jobq_cli_path(), "work", "--queue", test.q] + list(options) + ["--"] + command
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     env=env or cli_env(test.server.port))
        test.addCleanup(self.cleanup)

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait(self, timeout=WORKER_TIMEOUT):
        """Wait for the worker to exit; returns its exit code (fails on time-out)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("jobq work did not exit within %.0fs\n%s"
                                 % (timeout, self.text()))

    def wait_log(self, text, timeout=15):
        return wait_until(lambda: text in self.text(), timeout, what="%r in the log" % text)

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()
        self.tmp.cleanup()


def sh(script):
    return ["sh", "-c", script]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


class TestWork(ServerTest):
    server_args = ("--sweep-interval", "1")

    def run_jobs(self, command, *options, jobs=1):
        """Run a worker until it has claimed `jobs` jobs; returns its log."""
        w = Worker(self, command, "--max-jobs", str(jobs), "--wait", "2", *options)
        code = w.wait()
        self.assertEqual(code, 0, w.text())
        return w.text()

    def finished(self, job_id, timeout=10):
        return wait_until(lambda: (lambda j: j["status"] not in ("queued", "running") and j)(
            self.get_job(job_id)), timeout, what="job %d to finish" % job_id)

    def test_json_result_payload_on_stdin_and_environment(self):
        job = self.enqueue({"n": 2, "s": "caf\u00e9"})
        log = self.run_jobs(sh('read -r p; printf \'{"got": %s, "id": %s, "attempt": %s, '
                               '"fence": %s, "more": "%s"}\\n\' "$p" "$JOBQ_JOB_ID" '
                               '"$JOBQ_ATTEMPT" "$JOBQ_FENCING_TOKEN" "$(cat)"'))
        j = self.get_job(job["id"])
        self.assertEqual(j["status"], "succeeded", log)
        self.assertEqual(j["result"], {"got": {"n": 2, "s": "caf\u00e9"}, "id": job["id"],
                                       "attempt": 1, "fence": 1, "more": ""})
        self.assertIn("job %d: completed" % job["id"], log)

    def test_trace_context_reaches_the_command(self):
        # A request with a traceparent -> the job -> the claim -> the command's environment:
        # the same trace id (and tracestate); a job without one gets neither variable, even
        # when the worker itself runs under one.
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        r = self.c.post("/jobs", {"queue": self.q, "payload": 1},
                        headers={"traceparent": tp, "tracestate": "congo=t61rcWkgMzE"})
        self.assertEqual(r.status, 201, r)
        traced = r.json["id"]
        self.assertEqual(r.json["traceparent"], tp)
        plain = self.enqueue()["id"]
        # An invalid header is ignored (W3C): the job has no trace, and neither has its run.
        r = self.c.post("/jobs", {"queue": self.q, "payload": 1},
                        headers={"traceparent": tp.upper(), "tracestate": "congo=t61rcWkgMzE"})
        self.assertEqual(r.status, 201, r)
        invalid = r.json["id"]
        env = cli_env(self.server.port, TRACEPARENT="00-%s-%s-01" % ("1" * 32, "2" * 16))
        w = Worker(self, sh('cat >/dev/null; printf \'{"tp": "%s", "ts": "%s"}\\n\' '
                            '"${TRACEPARENT-none}" "${TRACESTATE-none}"'),
                   "--max-jobs", "3", "--wait", "2", env=env)
        self.assertEqual(w.wait(), 0, w.text())
        self.assertEqual(self.get_job(traced)["result"], {"tp": tp, "ts": "congo=t61rcWkgMzE"})
        self.assertEqual(self.get_job(traced)["result"]["tp"].split("-")[1],
                         "4bf92f3577b34da6a3ce929d0e0e4736")  # the same trace id
        self.assertEqual(self.get_job(plain)["result"], {"tp": "none", "ts": "none"})
        self.assertEqual(self.get_job(invalid)["result"], {"tp": "none", "ts": "none"})

    def test_text_and_empty_results(self):
        text = self.enqueue({"kind": "text"})["id"]
        empty = self.enqueue({"kind": "empty"})["id"]
        binary = self.enqueue({"kind": "binary"})["id"]
        self.run_jobs(sh('case "$(cat)" in *text*) printf "hello\\nworld\\n\\n";; '
                         '*binary*) printf "a\\377b";; esac'), jobs=3)
        self.assertEqual(self.get_job(text)["result"], "hello\nworld")
        self.assertIsNone(self.get_job(empty)["result"])
        self.assertEqual(self.get_job(empty)["status"], "succeeded")
        self.assertEqual(self.get_job(binary)["result"], "a\ufffdb")

    def test_exit_status_fails_with_exit_n_and_stderr_tail(self):
        job_id = self.enqueue(max_attempts=1)["id"]
        self.run_jobs(sh("i=0; while [ $i -lt 300 ]; do echo 'noise noise noise noise' >&2; "
                         "i=$((i+1)); done; echo 'the last words' >&2; exit 3"))
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["error_code"]), ("failed", "exit_3"))
        self.assertTrue(j["error_detail"].endswith("the last words\n"), j["error_detail"])
        self.assertLessEqual(len(j["error_detail"].encode()), 4096)
        self.assertGreater(len(j["error_detail"]), 3000)

    def test_failure_is_retried_by_the_server(self):
        job_id = self.enqueue(max_attempts=3)["id"]
        # The first attempt fails; the server's backoff (2 s) puts it back; the second runs.
        w = Worker(self, sh('[ "$JOBQ_ATTEMPT" = 2 ] && echo "\\"ok\\"" && exit 0; exit 1'),
                   "--max-jobs", "2", "--wait", "10")
        self.assertEqual(w.wait(), 0, w.text())
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["result"], j["attempts"], j["error_code"]),
                         ("succeeded", "ok", 2, "exit_1"), w.text())

    def test_killed_by_a_signal(self):
        killed = self.enqueue({"sig": "KILL"}, max_attempts=1)["id"]
        termed = self.enqueue({"sig": "TERM"}, max_attempts=1)["id"]
        self.run_jobs(sh('read -r p; echo "dying" >&2; case "$p" in *KILL*) kill -KILL $$;; '
                         '*) kill -TERM $$;; esac; sleep 5'), jobs=2)
        j = self.get_job(killed)
        self.assertEqual((j["status"], j["error_code"]), ("failed", "signal_9"))
        self.assertEqual(j["error_detail"], "dying\n")
        self.assertEqual(self.get_job(termed)["error_code"], "signal_15")

    def test_command_not_found_and_output_too_large(self):
        job_id = self.enqueue(max_attempts=1)["id"]
        log = self.run_jobs(["/nonexistent/program"])
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["error_code"]), ("failed", "spawn_failed"), log)
        self.assertIn("/nonexistent/program", j["error_detail"])
        job_id = self.enqueue(max_attempts=1)["id"]
        self.run_jobs(sh("head -c 100000 /dev/zero | tr '\\0' x"), "--max-output", "1000")
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["error_code"]), ("failed", "output_too_large"))

    def test_heartbeats_keep_a_job_past_its_lease(self):
        # A 3 s lease renewed every second; the command runs 5 s.
        job_id = self.enqueue()["id"]
        started = time.monotonic()
        log = self.run_jobs(sh("sleep 5; echo 5"), "--lease", "3")
        self.assertGreaterEqual(time.monotonic() - started, 5)
        j = self.get_job(job_id)
        self.assertEqual((j["status"], j["result"], j["attempts"], j["fencing_token"]),
                         ("succeeded", 5, 1, 1), log)
        self.assertGreater(j["heartbeat_at"], j["claimed_at"], log)

    def test_concurrency_runs_commands_at_once(self):
        tmp = tempfile.mkdtemp(prefix="jobq-conc-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        ids = [self.enqueue({"i": i})["id"] for i in range(4)]
        # Each command waits (at most 10 s) until all four have started.
        script = ('touch "%s/$JOBQ_JOB_ID"; i=0; while [ "$(ls "%s" | wc -l)" -lt 4 ] && '
                  '[ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; ls "%s" | wc -l'
                  % (tmp, tmp, tmp))
        log = self.run_jobs(sh(script), "--concurrency", "4", jobs=4)
        for job_id in ids:
            j = self.get_job(job_id)
            self.assertEqual((j["status"], j["result"]), ("succeeded", 4), log)
        self.assertEqual(len({self.get_job(i)["worker_id"] for i in ids}), 4)

    def test_cancel_kills_the_process_group_at_the_next_heartbeat(self):
        tmp = tempfile.mkdtemp(prefix="jobq-pg-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        pidfile = os.path.join(tmp, "pid")
        long_job = self.enqueue({"long": True}, priority=10)["id"]
        next_job = self.enqueue({"long": False})["id"]
        # The long job's command starts a grandchild (sleep) and waits for it.
        w = Worker(self, sh('read -r p; case "$p" in *true*) sleep 60 & echo $! > "%s"; wait;; '
                            'esac; echo done' % pidfile),
                   "--lease", "3", "--max-jobs", "2", "--wait", "2")
        def read_pid():
            try:
                with open(pidfile) as f:
                    return f.read().strip()
            except OSError:
                return None

        pid = int(wait_until(read_pid, 10, what="the grandchild's pid"))
        self.assertTrue(alive(pid))
        self.act(long_job, "cancel")
        started = time.monotonic()
        wait_until(lambda: not alive(pid), 5, what="the grandchild to be killed")
        self.assertLess(time.monotonic() - started, 3)
        self.assertEqual(w.wait(), 0, w.text())
        self.assertIn("job %d: lease lost on heartbeat" % long_job, w.text())
        j = self.get_job(long_job)
        self.assertEqual((j["status"], j["result"]), ("cancelled", None))
        self.assertEqual(self.get_job(next_job)["result"], "done")

    def test_sigterm_during_a_long_poll_exits_at_once(self):
        w = Worker(self, ["true"], "--wait", "30", "--concurrency", "3")
        w.wait_log("taking jobs from")
        time.sleep(0.5)  # the claims are parked in the server now
        started = time.monotonic()
        w.proc.send_signal(signal.SIGTERM)
        self.assertEqual(w.wait(timeout=10), 0, w.text())
        self.assertLess(time.monotonic() - started, 2, w.text())
        # Nothing was claimed by the abandoned polls: a job enqueued now stays queued.
        job_id = self.enqueue()["id"]
        time.sleep(0.5)
        self.assertEqual(self.get_job(job_id)["status"], "queued")

    def test_sigterm_lets_commands_finish_within_grace_then_fails_the_rest(self):
        quick = self.enqueue({"t": 1}, priority=10)["id"]
        slow = self.enqueue({"t": 60})["id"]
        w = Worker(self, sh('read -r p; t=$(echo "$p" | tr -dc 0-9); echo started >&2; '
                            'sleep "$t"; echo "$t"'),
                   "--concurrency", "2", "--grace", "3", "--lease", "30", "--wait", "1")
        wait_until(lambda: all(self.get_job(i)["status"] == "running" for i in (quick, slow)),
                   10, what="both jobs to run")
        started = time.monotonic()
        w.proc.send_signal(signal.SIGTERM)
        self.assertEqual(w.wait(timeout=15), 0, w.text())
        took = time.monotonic() - started
        self.assertGreaterEqual(took, 2.5, w.text())
        self.assertLess(took, 8, w.text())
        j = self.get_job(quick)
        self.assertEqual((j["status"], j["result"]), ("succeeded", 1), w.text())
        j = self.get_job(slow)
        self.assertEqual((j["status"], j["error_code"], j["attempts"]),
                         ("queued", "worker_stopped", 1), w.text())
        self.assertIn("started", j["error_detail"])

    def test_jobqd_restarted_while_the_worker_runs(self):
        first = self.enqueue({"t": 4})["id"]
        w = Worker(self, sh('read -r p; t=$(echo "$p" | tr -dc 0-9); sleep "$t"; echo "$t"'),
                   "--lease", "6", "--max-jobs", "2", "--wait", "2")
        # The worker's own word that it runs the job: the claim's answer reached it (a job
        # seen running in the database may still have its answer on the way).
        w.wait_log("job %d: running" % first)
        self.c.close()
        self.server.kill9()
        time.sleep(1.5)
        self.server.restart()
        j = self.finished(first, timeout=20)
        self.assertEqual((j["status"], j["result"], j["attempts"]), ("succeeded", 4, 1),
                         w.text())
        second = self.enqueue({"t": 0})["id"]
        self.assertEqual(w.wait(), 0, w.text())
        j = self.get_job(second)
        self.assertEqual((j["status"], j["result"]), ("succeeded", 0), w.text())

    def test_refused_claim_exits_1(self):
        p = subprocess.run([jobq_cli_path(), "work", "--queue", "bad queue!", "--", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=WORKER_TIMEOUT, env=cli_env(self.server.port))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("invalid_request", p.stderr)

if __name__ == "__main__":
    unittest.main()
