"""Logs (API.md "Operating"): every response carries X-Request-Id (the client's own when it is
1-200 characters of A-Z a-z 0-9 - _ ., else a new random one); one log line per request
(method, path, status, bytes, duration, request id) at info level, at debug with
--access-log=0; --log-format json writes every line as one JSON object."""
import json
import re
import subprocess
import time
import unittest

from harness import WRAPPER, Server, jobqd_path, wait_until

ID_CHARS = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def log_lines(srv):
    with open(srv.log_path, "rb") as f:
        return f.read().decode("utf-8", "replace").splitlines()


class RequestId(unittest.TestCase):
    def setUp(self):
        self.srv = Server()
        self.addCleanup(self.srv.cleanup)
        self.srv.start()
        self.c = self.srv.client()
        self.addCleanup(self.c.close)

    def test_a_valid_id_is_echoed_on_every_answer(self):
        rid = "Ab-9_z." + "x" * 193  # 200 characters
        for method, path, body, status in (("GET", "/healthz", None, 200),
                                           ("POST", "/jobs", {"payload": 1}, 201),
                                           ("GET", "/jobs/999999", None, 404),
                                           ("POST", "/jobs", {"payload": 1, "priority": "high"}, 400)):
            r = self.c.request(method, path, body, headers={"X-Request-Id": rid})
            self.assertEqual(r.status, status, r.body)
            self.assertEqual(r.header("X-Request-Id"), rid)

    def test_a_missing_or_invalid_id_is_replaced_by_a_new_one(self):
        seen = set()
        for given in (None, "", "has space", "x" * 201, "semi;colon", "üml"):
            headers = {} if given is None else {"X-Request-Id": given}
            r = self.c.request("GET", "/healthz", headers=headers)
            self.assertEqual(r.status, 200)
            rid = r.header("X-Request-Id")
            self.assertIsNotNone(rid)
            self.assertRegex(rid, ID_CHARS)
            self.assertNotEqual(rid, given)
            seen.add(rid)
        self.assertEqual(len(seen), 6, seen)  # a new id each time

    def test_one_access_line_per_request_with_its_fields(self):
        r = self.c.request("GET", "/jobs/424242", headers={"X-Request-Id": "trace-me-1"})
        self.assertEqual(r.status, 404)
        size = len(r.body)
        pattern = re.compile(r" info GET /jobs/424242 404 %d B [0-9]+\.[0-9]{3} ms id=trace-me-1$"
                             % size)
        wait_until(lambda: any(pattern.search(l) for l in log_lines(self.srv)), 5,
                   what="the access line")
        self.assertEqual(sum(1 for l in log_lines(self.srv) if "id=trace-me-1" in l), 1)


class Formats(unittest.TestCase):
    def start(self, *args):
        srv = Server(list(args))
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client()
        self.addCleanup(c.close)
        return srv, c

    def test_json_lines(self):
        srv, c = self.start("--log-format", "json")
        r = c.post("/jobs", {"payload": {"n": 1}}, headers={"X-Request-Id": "json-1"})
        self.assertEqual(r.status, 201)
        c.get("/jobs/31337", headers={"X-Request-Id": 'quote"less'})  # replaced: invalid

        def request_line():
            for line in log_lines(srv):
                obj = json.loads(line)
                if obj.get("request_id") == "json-1":
                    return obj
            return None
        obj = wait_until(request_line, 5, what="the JSON access line")
        self.assertEqual(obj["msg"], "request")
        self.assertEqual(obj["level"], "info")
        self.assertEqual(obj["method"], "POST")
        self.assertEqual(obj["path"], "/jobs")
        self.assertEqual(obj["status"], 201)
        self.assertEqual(obj["bytes"], len(r.body))
        self.assertIsInstance(obj["duration_ms"], float)
        self.assertRegex(obj["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        srv.stop_checked(self)
        # Every line, start-up and shutdown included, is one JSON object with ts, level, msg;
        # warnings say where they come from.
        lines = log_lines(srv)
        self.assertGreater(len(lines), 3)
        for line in lines:
            obj = json.loads(line)
            self.assertTrue({"ts", "level", "msg"} <= set(obj), line)
            if obj["level"] in ("warn", "error"):
                self.assertIn("src", obj, line)

    def test_access_log_off_moves_request_lines_to_debug(self):
        srv, c = self.start("--access-log=0")
        c.get("/healthz", headers={"X-Request-Id": "quiet-1"})
        time.sleep(0.3)
        self.assertFalse(any("quiet-1" in l for l in log_lines(srv)))
        srv2, c2 = self.start("--access-log", "--log-level", "debug")
        c2.get("/healthz", headers={"X-Request-Id": "loud-1"})
        wait_until(lambda: any("GET /healthz 200" in l and "id=loud-1" in l
                               for l in log_lines(srv2)), 5, what="the debug access line")

    def test_bad_log_format_stops_start_up(self):
        p = subprocess.run(WRAPPER + [jobqd_path(), "--log-format", "xml"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"--log-format", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
