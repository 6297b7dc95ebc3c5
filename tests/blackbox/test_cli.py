"""The command-line client `jobq` against a live jobqd: every subcommand, JSON off a
terminal or with --json, tables on a terminal, the server's error on stderr with exit code
1 (4xx), 2 for a bad command line, 3 when the server cannot be reached; JOBQ_URL and --url;
JOBQ_TOKEN sent as a bearer token to a server that requires one."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import test_auth  # its token helpers (the module, not its classes: they run in test_auth)
from cli_helpers import cli_env, run_jobq, run_jobq_tty
from harness import HOST, ServerTest, free_port, jobq_cli_path, wait_until

COMMANDS = ("enqueue", "get", "list", "attempts", "deps", "stats", "retry", "cancel", "pause",
            "resume", "purge", "events", "work")


class CliTest(ServerTest):
    """Helpers: jobq against this class's server."""

    def jobq(self, *args, stdin=None, env=None, expect=0):
        """Run jobq (stdout a pipe: JSON). Checks the exit code; returns (stdout, stderr)."""
        code, out, err = run_jobq(args, env or cli_env(self.server.port), stdin=stdin)
        self.assertEqual(code, expect, "jobq %s -> %d\n--- stdout ---\n%s\n--- stderr ---\n%s"
                         % (" ".join(args), code, out, err))
        return out, err

    def jobq_json(self, *args, **kw):
        out, _ = self.jobq(*args, **kw)
        self.assertEqual(out.count("\n"), 1, "one line of JSON: %r" % out)
        return json.loads(out)

    def jobq_tty(self, *args, expect=0):
        code, out, err = run_jobq_tty(args, cli_env(self.server.port))
        self.assertEqual(code, expect, "jobq %s -> %d\n%s\n%s" % (" ".join(args), code, out, err))
        return out, err

    def assert_refused(self, args, code, mentions=None, stdin=None):
        """jobq exits 1, prints nothing on stdout, and the server's code (and message) on
        stderr."""
        out, err = self.jobq(*args, stdin=stdin, expect=1)
        self.assertEqual(out, "")
        self.assertIn("jobq: %s: " % code, err)
        if mentions:
            self.assertIn(mentions, err)
        return err


class TestJobCommands(CliTest):

    def test_enqueue_with_every_option(self):
        j = self.jobq_json("enqueue", "--queue", self.q, "--priority", "-7", "--delay", "30",
                           "--max-attempts", "3", "--max-runtime", "60",
                           "--idempotency-key", "k-1", "--requires", "gpu",
                           "--requires", "ssd", '{"n": [1, 2, {"s": "\u00e9"}]}')
        self.assert_job(j)
        self.assertEqual((j["queue"], j["payload"], j["priority"], j["max_attempts"],
                          j["max_runtime_seconds"], j["idempotency_key"], j["requires"]),
                         (self.q, {"n": [1, 2, {"s": "\u00e9"}]}, -7, 3, 60, "k-1",
                          ["gpu", "ssd"]))
        self.assertGreaterEqual(j["run_at"], j["created_at"] + 29)
        self.assertEqual(self.get_job(j["id"])["payload"], j["payload"])
        # The same key in the same queue: the same job (200), nothing new.
        again = self.jobq_json("enqueue", "-q", self.q, "--idempotency-key", "k-1", "2")
        self.assertEqual(again["id"], j["id"])

    def test_enqueue_payload_from_stdin_and_run_at(self):
        run_at = self.server_time() + 3600
        j = self.jobq_json("enqueue", "-q", self.q, "--run-at", str(run_at),
                           stdin='  {"from": "stdin"}\n')
        self.assertEqual((j["payload"], j["run_at"]), ({"from": "stdin"}, run_at))
        j = self.jobq_json("enqueue", "-q", self.q, "-", stdin="[true, null]")
        self.assertEqual(j["payload"], [True, None])
        j = self.jobq_json("enqueue", "-q", self.q, "--", "-5")
        self.assertEqual(j["payload"], -5)
        j = self.jobq_json("enqueue", stdin='"default queue"')
        self.assertEqual((j["queue"], j["payload"]), ("default", "default queue"))

    def server_time(self):
        return self.enqueue()["created_at"]

    def test_get_json_and_table(self):
        job_id = self.enqueue({"hello": "world"}, priority=4)["id"]
        j = self.jobq_json("get", str(job_id))
        self.assertEqual(j, self.get_job(job_id))
        # On a terminal: one "name  value" line per field, in the server's order.
        out, _ = self.jobq_tty("get", str(job_id))
        lines = out.splitlines()
        self.assertEqual([line.split()[0] for line in lines], list(j.keys()), out)
        self.assertRegex(out, r"(?m)^id +%d$" % job_id)
        self.assertRegex(out, r"(?m)^status +queued$")
        self.assertRegex(out, r'(?m)^payload +\{"hello":"world"\}$')
        self.assertRegex(out, r"(?m)^worker_id +-$")
        self.assertRegex(out, r"(?m)^created_at +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        # --json on a terminal: the JSON again.
        out, _ = self.jobq_tty("--json", "get", str(job_id))
        self.assertEqual(json.loads(out), j)
        out, _ = self.jobq_tty("get", "--json", str(job_id))
        self.assertEqual(json.loads(out), j)

    def test_list_filters_pages_and_table(self):
        ids = [self.enqueue({"i": i})["id"] for i in range(5)]
        other = self.enqueue(queue=self.queue("other"))["id"]
        self.act(ids[1], "cancel")
        page = self.jobq_json("list", "--queue", self.q, "--limit", "2")
        self.assertEqual([j["id"] for j in page["jobs"]], ids[:2])
        self.assertIsInstance(page["next_cursor"], str)
        rest = self.jobq_json("list", "-q", self.q, "--cursor", page["next_cursor"])
        self.assertEqual([j["id"] for j in rest["jobs"]], ids[2:])
        self.assertIsNone(rest["next_cursor"])
        cancelled = self.jobq_json("list", "-q", self.q, "--status", "cancelled")
        self.assertEqual([j["id"] for j in cancelled["jobs"]], [ids[1]])
        self.assertNotIn(other, [j["id"] for j in self.jobq_json("list", "-q", self.q)["jobs"]])
        out, _ = self.jobq_tty("list", "-q", self.q, "-n", "3")
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "QUEUE", "STATUS", "PRIO", "ATTEMPTS",
                                            "RUN_AT", "ERROR", "PAYLOAD"], out)
        self.assertEqual([int(line.split()[0]) for line in lines[1:4]], ids[:3], out)
        self.assertEqual(lines[2].split()[:3], [str(ids[1]), self.q, "cancelled"], out)
        self.assertRegex(lines[4], r"^more: jobq list --cursor \S+$")
        self.assert_refused(["list", "--status", "bogus"], "invalid_request", "status")

    def test_enqueue_after_and_deps(self):
        a = self.enqueue({"step": "a"})["id"]
        b = self.enqueue({"step": "b"})["id"]
        j = self.jobq_json("enqueue", "-q", self.q, "--after", str(a), "--after", str(b),
                           "--after", str(a), "--on-dependency-failure", "run", "{}")
        self.assertEqual((j["status"], sorted(j["depends_on"]), j["on_dependency_failure"]),
                         ("blocked", sorted([a, b]), "run"))
        out, _ = self.jobq_tty("get", str(j["id"]))
        self.assertRegex(out, r"(?m)^depends_on +\[%d,%d\]$" % tuple(sorted([a, b])))
        self.assertRegex(out, r"(?m)^status +blocked$")
        deps = self.jobq_json("deps", str(j["id"]))
        self.assertEqual([(d["id"], d["status"]) for d in deps["dependencies"]],
                         [(a, "queued"), (b, "queued")])
        job = self.claim_one()
        self.assertEqual(job["id"], a)
        self.act(a, "complete", {"lease_token": job["lease_token"], "result": {"rows": 7}})
        out, _ = self.jobq_tty("deps", str(j["id"]))
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "STATUS", "QUEUE", "RESULT"], out)
        self.assertEqual(lines[1].split(), [str(a), "succeeded", self.q, '{"rows":7}'], out)
        self.assertEqual(lines[2].split()[:2], [str(b), "queued"], out)
        kids = self.jobq_json("deps", "--dependents", str(a))
        self.assertEqual(([d["id"] for d in kids["dependents"]], kids["more"]), ([j["id"]], False))
        self.assert_refused(["enqueue", "-q", self.q, "--after", "987654321", "{}"],
                            "invalid_request", "987654321")
        self.assert_refused(["enqueue", "-q", self.q, "--after", str(a),
                             "--on-dependency-failure", "later", "{}"],
                            "invalid_request", "on_dependency_failure")
        self.assert_refused(["deps", "987654321"], "not_found")
        _, err = self.jobq("enqueue", "--after", "x", "{}", expect=2)
        self.assertIn("--after", err)

    def test_cancel_and_retry(self):
        job_id = self.enqueue()["id"]
        j = self.jobq_json("cancel", str(job_id))
        self.assertEqual((j["id"], j["status"]), (job_id, "cancelled"))
        self.assert_refused(["cancel", str(job_id)], "conflict")
        j = self.jobq_json("retry", str(job_id))
        self.assertEqual((j["status"], j["attempts"]), ("queued", 0))
        self.assert_refused(["retry", str(job_id)], "conflict")
        out, _ = self.jobq_tty("cancel", str(job_id))
        self.assertRegex(out, r"(?m)^status +cancelled$")

    def test_stats(self):
        self.enqueue()
        self.enqueue()
        self.act(self.claim_one()["id"], "cancel")
        rows = {q["name"]: q for q in self.jobq_json("stats")["queues"]}
        self.assertEqual((rows[self.q]["queued"], rows[self.q]["cancelled"]), (1, 1))
        out, _ = self.jobq_tty("stats")
        lines = out.splitlines()
        self.assertEqual(lines[0].split()[:6], ["QUEUE", "QUEUED", "RUNNING", "SUCCEEDED",
                                                "FAILED", "CANCELLED"], out)
        row = [line.split() for line in lines[1:] if line.split()[0] == self.q]
        self.assertEqual(row[0][1:6], ["1", "0", "0", "0", "1"], out)

    def test_not_found_is_exit_1_with_the_servers_message(self):
        err = self.assert_refused(["get", "987654321"], "not_found")
        self.assertIn("987654321", err)
        self.assert_refused(["cancel", "987654321"], "not_found")
        self.assert_refused(["retry", "987654321"], "not_found")

    def test_bad_input_is_exit_1_with_the_servers_message(self):
        self.assert_refused(["enqueue", "-q", self.q, "--max-attempts", "0", "{}"],
                            "invalid_request", "max_attempts")
        self.assert_refused(["enqueue", "-q", "bad queue!", "{}"], "invalid_request", "queue")
        self.assert_refused(["enqueue", "--delay", "5", "--run-at", "1", "{}"],
                            "invalid_request")
        self.assert_refused(["enqueue", "-q", self.q, "--requires", "x" * 65, "{}"],
                            "invalid_request", "requires")
        self.assertEqual(self.list_all("queue=" + self.q), [])


class TestUsageAndReach(CliTest):

    def test_usage_errors_are_exit_2(self):
        cases = [
            [], ["frobnicate"], ["get"], ["get", "abc"], ["get", "0"], ["get", "1", "2"],
            ["list", "--bogus"], ["list", "extra"], ["enqueue", "{not json"],
            ["enqueue", "1", "2"], ["enqueue", "--priority", "high", "1"],
            ["enqueue", "--queue"], ["purge", self.q], ["pause"], ["stats", "x"],
            ["work", "--queue", self.q], ["work", "--", "true"],
            ["work", "-q", self.q, "--concurrency", "65", "--", "true"],
            ["work", "-q", self.q, "--concurrency", "0", "--", "true"],
            ["--json=1", "stats"],
        ]
        for args in cases:
            code, out, err = run_jobq(args, cli_env(self.server.port))
            self.assertEqual(code, 2, "jobq %r -> %d %r %r" % (args, code, out, err))
            self.assertEqual(out, "", args)
            self.assertTrue(err.strip(), args)
        self.assertEqual(self.list_all("queue=" + self.q), [])

    def test_help(self):
        out, _ = self.jobq("--help")
        for word in COMMANDS + ("JOBQ_URL", "JOBQ_TOKEN", "exit codes", "4xx", "5xx"):
            self.assertIn(word, out)
        self.assertRegex(out, r"(?m)^ +0 +")
        self.assertRegex(out, r"(?m)^ +3 +cannot reach")
        for cmd in COMMANDS:
            out, _ = self.jobq(cmd, "--help")
            self.assertTrue(out.startswith("usage: jobq %s" % cmd), out)
            self.assertIn("--url", out)
        out, _ = self.jobq("enqueue", "-h")
        for opt in ("--queue", "--priority", "--delay", "--run-at", "--max-attempts",
                    "--max-runtime", "--idempotency-key", "--requires"):
            self.assertIn(opt, out)
        out, _ = self.jobq("list", "--help")
        for opt in ("--queue", "--status", "--limit", "--cursor"):
            self.assertIn(opt, out)
        out, _ = self.jobq("work", "--help")
        for opt in ("--queue", "--concurrency", "--lease", "--grace", "JOBQ_FENCING_TOKEN"):
            self.assertIn(opt, out)

    def test_unreachable_server_is_exit_3(self):
        dead = "http://%s:%d" % (HOST, free_port())
        for args in (["stats"], ["get", "1"], ["enqueue", "{}"], ["list"]):
            code, out, err = run_jobq(["--url", dead] + args, cli_env())
            self.assertEqual((code, out), (3, ""), err)
            self.assertIn("cannot reach %s" % dead, err)
        code, _, err = run_jobq(["stats"], cli_env(JOBQ_URL=dead))
        self.assertEqual(code, 3, err)
        # --url wins over JOBQ_URL; JOBQ_URL over the default.
        good = "http://%s:%d" % (HOST, self.server.port)
        code, out, err = run_jobq(["stats", "--url", good], cli_env(JOBQ_URL=dead))
        self.assertEqual(code, 0, err)
        self.assertIn("queues", json.loads(out))
        code, out, err = run_jobq(["stats"], cli_env(JOBQ_URL=good))
        self.assertEqual(code, 0, err)


class TestToken(CliTest):
    """JOBQ_TOKEN is sent as "Authorization: Bearer" to a server with --auth-token-file."""

    ADMIN = test_auth.make_token("admin")
    PRODUCER = test_auth.make_token("producer")

    @classmethod
    def setUpClass(cls):
        tokdir = tempfile.mkdtemp(prefix="jobq-cli-tokens-")
        cls.addClassCleanup(shutil.rmtree, tokdir, ignore_errors=True)  # even if start fails
        path = test_auth.token_file(tokdir, "%s admin\n%s producer\n"
                                    % (cls.ADMIN, cls.PRODUCER))
        cls.server_args = ("--auth-token-file", path)
        super().setUpClass()

    def env(self, token):
        return cli_env(self.server.port, **({"JOBQ_TOKEN": token} if token else {}))

    def test_token_from_the_environment(self):
        code, out, err = run_jobq(["stats"], self.env(None))
        self.assertEqual((code, out), (1, ""), err)
        self.assertIn("jobq: unauthorized: ", err)
        code, out, err = run_jobq(["stats"], self.env("admin-" + "x" * 30))
        self.assertEqual(code, 1, err)
        self.assertIn("unauthorized", err)
        code, out, err = run_jobq(["enqueue", "-q", self.q, "{}"], self.env(self.PRODUCER))
        self.assertEqual(code, 0, err)
        job_id = json.loads(out)["id"]
        # A producer may not cancel: 403, exit 1.
        code, out, err = run_jobq(["cancel", str(job_id)], self.env(self.PRODUCER))
        self.assertEqual(code, 1, err)
        self.assertIn("jobq: forbidden: ", err)
        code, out, err = run_jobq(["cancel", str(job_id)], self.env(self.ADMIN))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["status"], "cancelled")
        code, out, err = run_jobq(["stats"], self.env("bad token\r\nX-Evil: 1"))
        self.assertEqual(code, 2, err)


class TestOperating(CliTest):
    """attempts, pause, resume and purge: the "Operating" endpoints of the contract."""

    def test_attempts(self):
        job_id = self.enqueue(max_attempts=3)["id"]
        self.assertEqual(self.jobq_json("attempts", str(job_id)), {"attempts": []})
        first = self.claim_one(worker="w-one")
        self.act(job_id, "fail", {"lease_token": first["lease_token"], "error_code": "boom",
                                  "error_detail": "it broke", "retry_in_seconds": 0})
        self.claim_one(worker="w-two")
        rows = self.jobq_json("attempts", str(job_id))["attempts"]
        self.assertEqual([(a["attempt"], a["worker_id"], a["outcome"], a["error_code"])
                          for a in rows],
                         [(1, "w-one", "retried", "boom"), (2, "w-two", "running", None)])
        out, _ = self.jobq_tty("attempts", str(job_id))
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["ATTEMPT", "WORKER", "CLAIMED", "ENDED", "OUTCOME",
                                            "ERROR", "DETAIL"], out)
        self.assertEqual(lines[1].split()[:2], ["1", "w-one"], out)
        self.assertIn("retried", lines[1])
        self.assertIn("it broke", lines[1])
        self.assertIn("running", lines[2])
        self.assert_refused(["attempts", "987654321"], "not_found")

    def test_pause_and_resume(self):
        self.enqueue()
        row = self.jobq_json("pause", self.q)
        self.assertEqual((row["name"], row["paused"]), (self.q, True))
        self.claim(expect=0)
        self.jobq_json("pause", self.q)  # twice: 200
        rows = {q["name"]: q for q in self.jobq_json("stats")["queues"]}
        self.assertTrue(rows[self.q]["paused"])
        out, _ = self.jobq_tty("resume", self.q)
        self.assertIn("PAUSED", out.splitlines()[0])
        self.assertRegex(out.splitlines()[1], r"^%s +1 .*false" % re.escape(self.q))
        self.claim(expect=1)
        self.assert_refused(["pause", "bad queue!"], "invalid_request")

    def test_purge(self):
        ids = [self.enqueue()["id"] for _ in range(3)]
        self.act(ids[0], "cancel")
        running = self.claim_one()["id"]
        out = self.jobq_json("purge", self.q, "--status", "queued")
        self.assertEqual(out, {"deleted": 1})
        self.assertEqual(sorted(j["id"] for j in self.list_all("queue=" + self.q)),
                         sorted([ids[0], running]))
        out, _ = self.jobq_tty("purge", self.q, "-s", "cancelled")
        self.assertEqual(out.strip(), "deleted 1 jobs")
        self.assert_refused(["purge", self.q, "--status", "running"], "invalid_request")
        self.assertEqual([j["id"] for j in self.list_all("queue=" + self.q)], [running])


class TestLimits(CliTest):
    def test_set_list_delete(self):
        k, p = self.q + "/t:1", self.q + ":*"
        got = self.jobq_json("limits", "set", k, "--max-running", "2")
        self.assertEqual(got, {"key": k, "max_running": 2, "rate": None, "running": 0,
                               "paused_until": None, "window_used": None, "held": 0})
        got = self.jobq_json("limits", "set", p, "-r", "10/60", "-m", "3")
        self.assertEqual((got["max_running"], got["rate"]), (3, {"jobs": 10, "per_seconds": 60}))
        # set replaces: the rate alone now.
        got = self.jobq_json("limits", "set", k, "--rate", "5/1")
        self.assertEqual((got["max_running"], got["rate"]), (None, {"jobs": 5, "per_seconds": 1}))
        mine = [l["key"] for l in self.jobq_json("limits")["limits"] if l["key"].startswith(self.q)]
        self.assertEqual(mine, sorted([k, p], key=lambda s: s.encode()))
        out, _ = self.jobq_tty("limits")
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["KEY", "MAX_RUNNING", "RATE", "RUNNING",
                                            "PAUSED_UNTIL"], out)
        self.assertIn([k, "-", "5/1s", "0", "-"], [line.split() for line in lines[1:]], out)
        self.assertIn([p, "3", "10/60s", "0", "-"], [line.split() for line in lines[1:]], out)
        got = self.jobq_json("limits", "delete", k)
        self.assertEqual(got["key"], k)
        self.assert_refused(["limits", "delete", k], "not_found")
        mine = [l["key"] for l in self.jobq_json("limits")["limits"] if l["key"].startswith(self.q)]
        self.assertEqual(mine, [p])

    def test_bad_input(self):
        k = self.q + ":bad"
        self.assert_refused(["limits", "set", k, "--max-running", "0"], "invalid_request",
                            "max_running")
        self.assert_refused(["limits", "set", k, "--rate", "1/86401"], "invalid_request",
                            "rate.per_seconds")
        self.assert_refused(["limits", "set", self.q + "*x", "-m", "1"], "invalid_request", "key")
        for args in (["limits", "set", k], ["limits", "set", k, "--rate", "5"],
                     ["limits", "set", k, "--rate", "a/b"], ["limits", "set", "-m", "1"],
                     ["limits", "frob", k], ["limits", "delete"], ["limits", "-m", "1"]):
            _, err = self.jobq(*args, expect=2)
            self.assertIn("jobq limits", err)


class TestSchedules(CliTest):
    def test_set_list_pause_resume_delete(self):
        n = self.q
        job = '{"queue": "%s", "payload": {"r": 1}}' % self.q
        got = self.jobq_json("schedules", "set", n, "--cron", "0 9 * * MON", "-z",
                             "Europe/Berlin", "--job", job, "--overlap", "skip")
        self.assertEqual((got["name"], got["cron"], got["timezone"], got["overlap"],
                          got["catch_up"], got["paused"]),
                         (n, "0 9 * * MON", "Europe/Berlin", "skip", "latest", False))
        self.assertEqual(got["job"], {"queue": self.q, "payload": {"r": 1}})
        got = self.jobq_json("schedules", "set", n + ".e", "--every", "3600", "-j", job,
                             "--catch-up", "none", "--paused")
        self.assertEqual((got["every_seconds"], got["catch_up"], got["paused"],
                          got["next_run_at"]), (3600, "none", True, None))
        mine = [s["name"] for s in self.jobq_json("schedules")["schedules"]
                if s["name"].startswith(n)]
        self.assertEqual(mine, [n, n + ".e"])
        out, _ = self.jobq_tty("schedules")
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "WHEN", "TIMEZONE", "NEXT_RUN", "LAST_RUN",
                                            "LAST_JOB", "PAUSED"], out)
        rows = {line.split()[0]: line for line in lines[1:]}
        self.assertIn("every 3600s", rows[n + ".e"])
        self.assertIn("0 9 * * MON", rows[n])
        got = self.jobq_json("schedules", "resume", n + ".e")
        self.assertEqual((got["paused"], got["every_seconds"], got["catch_up"]),
                         (False, 3600, "none"))
        self.assertIsNotNone(got["next_run_at"])
        got = self.jobq_json("schedules", "pause", n)
        self.assertEqual((got["paused"], got["cron"], got["overlap"], got["next_run_at"]),
                         (True, "0 9 * * MON", "skip", None))
        for name in (n, n + ".e"):
            self.assertEqual(self.jobq_json("schedules", "delete", name)["name"], name)
        self.assert_refused(["schedules", "delete", n], "not_found")
        self.assert_refused(["schedules", "pause", n], "not_found")

    def test_bad_input(self):
        n = self.q
        job = '{"payload": 1}'
        self.assert_refused(["schedules", "set", n, "--cron", "61 * * * *", "--job", job],
                            "invalid_request", "minute")
        self.assert_refused(["schedules", "set", n, "--every", "5", "--job", job, "-z", "Nowhere"],
                            "invalid_request", "timezone")
        self.assert_refused(["schedules", "set", n, "--every", "5", "--job", '{"priority": 1}'],
                            "invalid_request", "job.payload")
        for args in (["schedules", "set", n, "--job", job],
                     ["schedules", "set", n, "--every", "5", "--cron", "* * * * *", "--job", job],
                     ["schedules", "set", n, "--every", "5"],
                     ["schedules", "set", n, "--every", "5", "--job", "{nope"],
                     ["schedules", "frob", n], ["schedules", "delete"],
                     ["schedules", "--every", "5"]):
            _, err = self.jobq(*args, expect=2)
            self.assertIn("jobq schedules", err)



class Follower:
    """`jobq events --follow ... ARGS` with stdout and stderr in files; wait() for its exit."""

    def __init__(self, test, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix="jobq-events-")
        self.out_path = os.path.join(self.tmp.name, "out")
        self.err_path = os.path.join(self.tmp.name, "err")
        self.out, self.err = open(self.out_path, "wb"), open(self.err_path, "wb")
        self.proc = subprocess.Popen([jobq_cli_path(), "events", "--follow"] + list(args),
                                     stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=self.err, env=cli_env(test.server.port))
        test.addCleanup(self.cleanup)

    def text(self, which="out"):
        with open(self.out_path if which == "out" else self.err_path, "rb") as f:
            return f.read().decode()

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("jobq events did not exit\n%s\n%s"
                                 % (self.text(), self.text("err")))

    def events(self):
        return [json.loads(ln) for ln in self.text().splitlines()]

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.out.close()
        self.err.close()
        self.tmp.cleanup()


class TestEvents(CliTest):
    server_per_test = True
    server_args = ["--sweep-interval", "1"]

    def lifecycle(self, n):
        ids = []
        for _ in range(n):
            ids.append(self.enqueue()["id"])
            j = self.claim_one()
            self.act(j["id"], "complete", {"lease_token": j["lease_token"]})
        return ids

    def test_page_without_follow(self):
        ids = [self.enqueue()["id"] for _ in range(2)]
        page = self.jobq_json("events", "--queue", self.q)
        self.assertEqual([(e["type"], e["job"]["id"]) for e in page["events"]],
                         [("job.created", i) for i in ids])
        self.assertEqual(page["next"], page["events"][-1]["seq"])
        page = self.jobq_json("events", "--queue", self.q, "--after", str(page["next"]))
        self.assertEqual(page["events"], [])
        page = self.jobq_json("events", "--job", str(ids[1]), "--types", "job.created,job.claimed",
                              "--limit", "5")
        self.assertEqual([e["job"]["id"] for e in page["events"]], [ids[1]])
        self.assert_refused(["events", "--types", "job.nothing"], "invalid_request",
                            "job.nothing")
        self.assert_refused(["events", "--follow", "--types", "job.nothing"],
                            "invalid_request", "job.nothing")
        self.jobq("events", "--after", "x", expect=2)

    def test_follow_prints_each_event_once_in_order(self):
        f = Follower(self, "--queue", self.q, "--count", "9")
        ids = self.lifecycle(3)
        self.assertEqual(f.wait(), 0, f.text("err"))
        ev = f.events()
        self.assertEqual([(e["job"]["id"], e["type"]) for e in ev],
                         [(i, t) for i in ids
                          for t in ("job.created", "job.claimed", "job.succeeded")])
        seqs = [e["seq"] for e in ev]
        self.assertEqual(seqs, sorted(set(seqs)))

    def test_follow_resumes_after_the_server_is_killed(self):
        f = Follower(self, "--queue", self.q, "--count", "12")
        first = self.lifecycle(2)
        wait_until(lambda: f.text().count("\n") >= 6, 30, what="the first 6 events printed")
        self.server.kill9()
        self.server.restart()
        self.c.close()
        self.c = self.server.client()
        more = self.lifecycle(2)
        self.assertEqual(f.wait(), 0, f.text("err"))
        self.assertEqual([(e["job"]["id"], e["type"]) for e in f.events()],
                         [(i, t) for i in first + more
                          for t in ("job.created", "job.claimed", "job.succeeded")])
        self.assertIn("resuming after seq", f.text("err"))



class TestEventsGap(CliTest):
    server_args = ["--sweep-interval", "1", "--events-max", "3"]

    def test_readable_lines_and_the_gap(self):
        for _ in range(6):
            self.enqueue()
        def bounded():
            r = self.c.get("/events?after=0", headers={"Accept": "application/json"})
            return "gap" in r.json and len(r.json["events"]) <= 3
        wait_until(bounded, 30, what="the sweep to bound the log")
        out, err = self.jobq_tty("events", "--follow", "--after", "0", "--count", "1")
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^-- gap: the events after seq 0 are no longer kept")
        self.assertRegex(lines[1], r"^\d+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  job\.created +"
                                   r"job \d+  queue %s  queued  attempts 0$" % re.escape(self.q))
        self.assertIn("gap after seq 0", err)


class TestWebhooks(CliTest):
    def test_put_list_delete(self):
        n = self.q
        url = "http://203.0.113.10/hook"  # a documentation address: public, never answers
        got = self.jobq_json("webhooks", "put", n, "--endpoint", url, "--types",
                             "job.succeeded,job.failed", "--queues", "%s,%s.b" % (n, n))
        self.assertEqual((got["name"], got["url"], got["types"], got["queues"], got["enabled"],
                          got["ordered"]),
                         (n, url, ["job.succeeded", "job.failed"], [n, n + ".b"], True, False))
        self.assertTrue(got["secret"].startswith("whsec_"))
        got = self.jobq_json("webhooks", "put", n, "-e", url, "--disabled", "--ordered")
        self.assertEqual((got["enabled"], got["ordered"], got["types"]), (False, True, None))
        self.assertNotIn("secret", got)
        self.assertIn(n, [w["name"] for w in self.jobq_json("webhooks")["webhooks"]])
        out, _ = self.jobq_tty("webhooks")
        self.assertEqual(out.splitlines()[0].split()[:4], ["NAME", "URL", "ENABLED", "DELIVERED"])
        self.assertIn(url, out)
        self.assertEqual(self.jobq_json("webhooks", "delete", n)["name"], n)
        self.assert_refused(["webhooks", "delete", n], "not_found")

    def test_bad_input(self):
        n = self.q
        self.assert_refused(["webhooks", "put", n, "--endpoint", "ftp://x/"], "invalid_request",
                            "url")
        self.assert_refused(["webhooks", "put", n, "-e", "http://203.0.113.10/", "-s", "nope"],
                            "invalid_request", "secret")
        self.assert_refused(["webhooks", "put", n, "-e", "http://127.0.0.1/"], "invalid_request",
                            "loopback")
        for args in (["webhooks", "put", n], ["webhooks", "frob", n], ["webhooks", "delete"],
                     ["webhooks", "--endpoint", "http://203.0.113.10/"]):
            _, err = self.jobq(*args, expect=2)
            self.assertIn("jobq webhooks", err)


if __name__ == "__main__":
    unittest.main()
