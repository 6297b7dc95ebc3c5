"""Every error of the contract: invalid_json, invalid_request at and past each limit,
not_found, method_not_allowed, lease_lost, conflict, payload_too_large,
unsupported_media_type; and the shape of every error body. SchemaLimits reads its limits off
openapi.yaml (through tests/openapi/openapi_spec.py), so the server is held to the document."""

import copy
import itertools
import os
import re
import socket
import sys
import time
import unittest
import urllib.parse

from harness import HOST, ServerTest, now, raw_exchange, read_response

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "openapi"))
import openapi_spec  # noqa: E402  (tests/openapi: openapi.yaml as data)

OPENAPI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "openapi.yaml")

RUN_AT_BOUND = 4102444800  # 2100-01-01 UTC: run_at must be before it (API.md)
# Reads and deletes of one schedule or limit: a name or key that none can have is not found.
LOOKUPS = ("GET /schedules/{name}", "DELETE /schedules/{name}", "GET /limits/{key}",
           "DELETE /limits/{key}", "GET /webhooks/{name}", "DELETE /webhooks/{name}")


def nested(depth):
    """A body whose nesting is exactly `depth` levels, the top-level object included."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return ('{"payload": %s}' % inner).encode()


class InvalidJson(ServerTest):
    def post_raw(self, path, data, ctype="application/json"):
        headers = {"Content-Type": ctype} if ctype else {}
        return self.c.request("POST", path, raw=data, headers=headers)

    def test_malformed(self):
        for data in (b"{", b'{"payload": }', b"{'payload': 1}", b'{"payload": 1,}',
                     b'{"payload": tru}', b'{"payload": 01}', b'{"payload": "\\x"}',
                     b'{"payload": NaN}', b'{"payload" 1}', b"nul", b'"unterminated',
                     b'{"payload": "a\x01b"}'):
            r = self.post_raw("/jobs", data)
            self.assert_error(r, 400, "invalid_json")

    def test_trailing_garbage(self):
        for data in (b'{"payload": 1} x', b'{"payload": 1}{}', b'{"payload": 1}}',
                     b'{"payload": 1}\x00'):
            r = self.post_raw("/jobs", data)
            self.assert_error(r, 400, "invalid_json")
        r = self.post_raw("/jobs", b'  {"payload": 1, "queue": "%s"} \r\n\t' % self.q.encode())
        self.assertEqual(r.status, 201, r)

    def test_bad_utf8(self):
        for data in (b'{"payload": "\xff"}', b'{"payload": "\xc3"}', b'{"payload": "\xc0\xaf"}',
                     b'{"payload": "\xed\xa0\x80"}', b'{"payload": {"k\xfe": 1}}',
                     b'{"queue": "\xe2\x82", "payload": 1}'):
            r = self.post_raw("/jobs", data)
            self.assert_error(r, 400, "invalid_json")
        # Valid multi-byte UTF-8 is fine.
        body = '{"queue": "%s", "payload": "h\u00e9 \u20ac \U0001F600"}' % self.q
        r = self.post_raw("/jobs", body.encode("utf-8"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["payload"], "h\u00e9 \u20ac \U0001F600")

    def test_depth_64_ok_65_rejected(self):
        r = self.post_raw("/jobs", nested(64))
        self.assertEqual(r.status, 201, r)
        r = self.post_raw("/jobs", nested(65))
        self.assert_error(r, 400, "invalid_json")
        r = self.post_raw("/jobs", nested(1000))
        self.assert_error(r, 400, "invalid_json")
        # Objects count as levels too.
        deep = b'{"payload": ' + b'{"a": ' * 63 + b"1" + b"}" * 63 + b"}"
        r = self.post_raw("/jobs", deep)
        self.assertEqual(r.status, 201, r)
        deeper = b'{"payload": ' + b'{"a": ' * 64 + b"1" + b"}" * 64 + b"}"
        r = self.post_raw("/jobs", deeper)
        self.assert_error(r, 400, "invalid_json")

    def test_invalid_json_on_every_body_route(self):
        j = self.enqueue()
        for path in ("/jobs", "/jobs/batch", "/claim", "/jobs/%d/heartbeat" % j["id"],
                     "/jobs/%d/complete" % j["id"], "/jobs/%d/fail" % j["id"]):
            r = self.post_raw(path, b"{not json")
            self.assert_error(r, 400, "invalid_json")


    def test_invalid_json_on_routes_that_take_no_body(self):
        """Every request body is JSON (API.md Conventions), even where the route reads none:
        a body that is not JSON, not UTF-8 or nested 65 deep is refused before anything is
        done; an object (unknown fields ignored) is fine."""
        j = self.enqueue()
        routes = (("POST", "/jobs/%d/cancel" % j["id"]), ("POST", "/jobs/%d/retry" % j["id"]),
                  ("POST", "/queues/%s/pause" % self.q), ("POST", "/queues/%s/resume" % self.q),
                  ("DELETE", "/queues/%s/jobs?status=queued" % self.q))
        for method, path in routes:
            for data in (b"{not json", b'{"a": "\xff"}', nested(65)):
                r = self.c.request(method, path, raw=data,
                                   headers={"Content-Type": "application/json"})
                self.assert_error(r, 400, "invalid_json")
        self.assertEqual(self.get_job(j["id"])["status"], "queued")
        self.assertFalse(self.queue_row()["paused"])
        r = self.c.request("POST", "/jobs/%d/cancel" % j["id"], raw=b'{"reason": "x"}',
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "cancelled")

    def queue_row(self):
        rows = [q for q in self.c.get("/queues").json["queues"] if q["name"] == self.q]
        self.assertEqual(len(rows), 1)
        return rows[0]


class InvalidRequest(ServerTest):
    def bad(self, path, body, field=None):
        r = self.c.post(path, body)
        self.assert_error(r, 400, "invalid_request", mentions=field)
        return r

    def job_ok(self, **fields):
        body = {"queue": self.q, "payload": 1}
        body.update(fields)
        r = self.c.post("/jobs", body)
        self.assertEqual(r.status, 201, "%r -> %r" % (body, r))
        return r.json

    def job_bad(self, field, **fields):
        body = {"queue": self.q, "payload": 1}
        body.update(fields)
        return self.bad("/jobs", body, field)

    def test_non_object_body(self):
        for raw in (b"[]", b"[1]", b"1", b'"x"', b"null", b"true"):
            r = self.c.request("POST", "/jobs", raw=raw,
                               headers={"Content-Type": "application/json"})
            self.assert_error(r, 400, "invalid_request")
            r = self.c.request("POST", "/claim", raw=raw,
                               headers={"Content-Type": "application/json"})
            self.assert_error(r, 400, "invalid_request")

    def test_missing_payload(self):
        self.bad("/jobs", {"queue": self.q}, "payload")
        self.bad("/jobs", {}, "payload")

    def test_queue_limits(self):
        self.job_ok(queue="q" * 128)
        self.job_ok(queue="AZaz09._:-")
        self.job_bad("queue", queue="q" * 129)
        self.job_bad("queue", queue="")
        for bad in ("has space", "a/b", "a?b", "caf\u00e9", "tab\t", "a,b", "*"):
            self.job_bad("queue", queue=bad)
        for wrong in (5, ["a"], {"a": 1}, True):
            self.job_bad("queue", queue=wrong)

    def test_priority_limits(self):
        self.assertEqual(self.job_ok(priority=2**31 - 1)["priority"], 2**31 - 1)
        self.assertEqual(self.job_ok(priority=-2**31)["priority"], -2**31)
        self.job_bad("priority", priority=2**31)
        self.job_bad("priority", priority=-2**31 - 1)
        self.job_bad("priority", priority=2**63)
        self.job_bad("priority", priority=1.5)
        self.job_bad("priority", priority="1")
        self.job_bad("priority", priority=True)
        r = self.c.request("POST", "/jobs", raw=b'{"payload": 1, "priority": 1e400}',
                           headers={"Content-Type": "application/json"})
        self.assert_error(r, 400, "invalid_request", mentions="priority")

    def test_max_attempts_limits(self):
        self.job_ok(max_attempts=1)
        self.job_ok(max_attempts=1000)
        self.job_bad("max_attempts", max_attempts=0)
        self.job_bad("max_attempts", max_attempts=1001)
        self.job_bad("max_attempts", max_attempts=-1)
        self.job_bad("max_attempts", max_attempts="5")
        self.job_bad("max_attempts", max_attempts=2.5)

    def test_max_runtime_limits(self):
        self.job_ok(max_runtime_seconds=1)
        self.job_ok(max_runtime_seconds=2592000)
        self.job_bad("max_runtime_seconds", max_runtime_seconds=0)
        self.job_bad("max_runtime_seconds", max_runtime_seconds=2592001)
        self.job_bad("max_runtime_seconds", max_runtime_seconds="60")

    def test_delay_seconds_limits(self):
        self.job_ok(delay_seconds=0)
        self.job_ok(delay_seconds=31536000)
        self.job_bad("delay_seconds", delay_seconds=31536001)
        self.job_bad("delay_seconds", delay_seconds=-1)
        self.job_bad("delay_seconds", delay_seconds=1.5)
        self.job_bad("delay_seconds", delay_seconds="10")

    def test_run_at_limits(self):
        t = now()
        self.job_ok(run_at=0)
        self.job_ok(run_at=RUN_AT_BOUND - 1)
        self.job_bad("run_at", run_at=-1)
        self.job_bad("run_at", run_at=RUN_AT_BOUND)
        self.job_bad("run_at", run_at=2**62)
        self.job_bad("run_at", run_at=t + 0.5)
        self.job_bad("run_at", run_at=str(t))

    def test_run_at_with_delay(self):
        self.job_bad(None, run_at=now(), delay_seconds=5)

    def test_idempotency_key_limits(self):
        self.job_ok(idempotency_key="k" * 200)
        self.job_bad("idempotency_key", idempotency_key="k" * 201)
        self.job_bad("idempotency_key", idempotency_key="")
        self.job_bad("idempotency_key", idempotency_key=17)
        # Lengths are bytes of UTF-8: 100 two-byte characters are 200 bytes, 101 are 202.
        self.job_ok(idempotency_key="\u00e9" * 100)
        self.job_bad("idempotency_key", idempotency_key="\u00e9" * 101)

    def test_requires_limits(self):
        self.job_ok(requires=["t%d" % i for i in range(32)])
        self.job_bad("requires", requires=["t%d" % i for i in range(33)])
        self.job_ok(requires=["x" * 64])
        self.job_bad("requires", requires=["x" * 65])
        self.job_bad("requires", requires=[""])
        self.job_bad("requires", requires=[1])
        self.job_bad("requires", requires=[None])
        self.job_bad("requires", requires="gpu")
        self.job_bad("requires", requires={"gpu": True})
        self.job_ok(requires=[])

    def test_worker_id_limits(self):
        self.enqueue()
        r = self.c.post("/claim", {"worker_id": "w" * 200, "queue": self.q})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["jobs"][0]["worker_id"], "w" * 200)
        self.bad("/claim", {"worker_id": "w" * 201, "queue": self.q}, "worker_id")
        self.bad("/claim", {"worker_id": "\u00e9" * 101, "queue": self.q}, "worker_id")
        self.bad("/claim", {"worker_id": "", "queue": self.q}, "worker_id")
        self.bad("/claim", {"queue": self.q}, "worker_id")
        self.bad("/claim", {"worker_id": 7, "queue": self.q}, "worker_id")
        self.bad("/claim", {"worker_id": None, "queue": self.q}, "worker_id")

    def claim_ok(self, **fields):
        body = {"worker_id": "w", "queue": self.queue("none")}
        body.update(fields)
        r = self.c.post("/claim", body)
        self.assertEqual(r.status, 200, "%r -> %r" % (body, r))
        return r.json["jobs"]

    def claim_bad(self, field, **fields):
        body = {"worker_id": "w", "queue": self.queue("none")}
        body.update(fields)
        return self.bad("/claim", body, field)

    def test_claim_queue_and_queues(self):
        self.claim_bad(None, queues=["a"])  # queue (from claim_bad) and queues together
        body = {"worker_id": "w", "queues": []}
        self.bad("/claim", body, "queues")
        self.bad("/claim", {"worker_id": "w", "queues": ["q%d" % i for i in range(33)]},
                 "queues")
        r = self.c.post("/claim", {"worker_id": "w", "queues": ["q%d" % i for i in range(32)]})
        self.assertEqual(r.status, 200, r)
        self.bad("/claim", {"worker_id": "w", "queues": ["ok", "bad name"]}, "queues")
        self.bad("/claim", {"worker_id": "w", "queues": ["ok", 5]}, "queues")
        self.bad("/claim", {"worker_id": "w", "queues": "ok"}, "queues")
        self.claim_bad("queue", queue="bad name")
        self.claim_bad("queue", queue="q" * 129)
        self.claim_bad("queue", queue=["a"])
        self.claim_ok(queue="q" * 128)

    def test_claim_lease_seconds(self):
        self.claim_ok(lease_seconds=1)
        self.claim_ok(lease_seconds=86400)
        self.claim_bad("lease_seconds", lease_seconds=0)
        self.claim_bad("lease_seconds", lease_seconds=86401)
        self.claim_bad("lease_seconds", lease_seconds="30")
        self.claim_bad("lease_seconds", lease_seconds=1.5)

    def test_claim_max_jobs(self):
        self.claim_ok(max_jobs=1)
        self.claim_ok(max_jobs=100)
        self.claim_bad("max_jobs", max_jobs=0)
        self.claim_bad("max_jobs", max_jobs=101)
        self.claim_bad("max_jobs", max_jobs="2")

    def test_claim_wait_seconds(self):
        # A due job makes these return at once, so 60 does not wait.
        self.enqueue()
        self.assertEqual(len(self.claim(wait_seconds=60)), 1)
        self.claim_ok(wait_seconds=0)
        self.claim_bad("wait_seconds", wait_seconds=61)
        self.claim_bad("wait_seconds", wait_seconds=-1)
        self.claim_bad("wait_seconds", wait_seconds="1")

    def test_claim_capabilities(self):
        self.claim_ok(capabilities=["c%d" % i for i in range(32)])
        self.claim_bad("capabilities", capabilities=["c%d" % i for i in range(33)])
        self.claim_ok(capabilities=["x" * 64])
        self.claim_bad("capabilities", capabilities=["x" * 65])
        self.claim_bad("capabilities", capabilities=[""])
        self.claim_bad("capabilities", capabilities=[3])
        self.claim_bad("capabilities", capabilities="gpu")

    def test_lease_token_required(self):
        j = self.enqueue()
        c = self.claim_one()
        for action in ("heartbeat", "complete", "fail"):
            self.bad("/jobs/%d/%s" % (j["id"], action), {}, "lease_token")
            self.bad("/jobs/%d/%s" % (j["id"], action), {"lease_token": 5}, "lease_token")
            r = self.c.post("/jobs/%d/%s" % (j["id"], action))
            self.assert_error(r, 400, "invalid_request", mentions="lease_token")
        # The job is untouched.
        g = self.get_job(j["id"])
        self.assertEqual(g["status"], "running")
        self.assertEqual(g["lease_expires_at"], c["lease_expires_at"])

    def test_heartbeat_and_fail_fields(self):
        j = self.enqueue()
        c = self.claim_one()
        tok = c["lease_token"]
        path = "/jobs/%d/" % j["id"]
        self.bad(path + "heartbeat", {"lease_token": tok, "lease_seconds": 0}, "lease_seconds")
        self.bad(path + "heartbeat", {"lease_token": tok, "lease_seconds": 86401},
                 "lease_seconds")
        self.bad(path + "fail", {"lease_token": tok, "retry_in_seconds": -1},
                 "retry_in_seconds")
        self.bad(path + "fail", {"lease_token": tok, "retry_in_seconds": 31536001},
                 "retry_in_seconds")
        self.bad(path + "fail", {"lease_token": tok, "retry": "yes"}, "retry")
        self.bad(path + "fail", {"lease_token": tok, "error_code": 5}, "error_code")
        self.assertEqual(self.get_job(j["id"])["status"], "running")
        self.act(j["id"], "heartbeat", {"lease_token": tok, "lease_seconds": 86400})
        f = self.act(j["id"], "fail", {"lease_token": tok, "retry_in_seconds": 31536000}).json
        self.assertEqual(f["status"], "queued")

    def test_unknown_fields_ignored(self):
        j = self.job_ok(colour="blue", nested={"x": [1, 2]})
        self.assertNotIn("colour", j)

    def test_batch_limits(self):
        self.bad("/jobs/batch", {"jobs": []}, "jobs")
        self.bad("/jobs/batch", {"jobs": [{"queue": self.q, "payload": i}
                                          for i in range(1001)]}, "jobs")
        self.bad("/jobs/batch", {}, "jobs")
        self.bad("/jobs/batch", {"jobs": {"payload": 1}}, "jobs")
        self.bad("/jobs/batch", {"jobs": "x"}, "jobs")
        r = self.c.get("/jobs?queue=" + self.q)
        self.assertEqual(r.json["jobs"], [])

    def test_list_query_limits(self):
        r = self.c.get("/jobs?limit=1000")
        self.assertEqual(r.status, 200, r)
        r = self.c.get("/jobs?limit=1")
        self.assertEqual(r.status, 200, r)
        for q in ("limit=0", "limit=1001", "limit=-1", "limit=abc", "limit=1.5"):
            r = self.c.get("/jobs?" + q)
            self.assert_error(r, 400, "invalid_request", mentions="limit")
        for q in ("status=bogus", "status=QUEUED"):
            r = self.c.get("/jobs?" + q)
            self.assert_error(r, 400, "invalid_request", mentions="status")
        for q in ("cursor=!!not-a-cursor!!", "cursor=%25%25%25"):
            r = self.c.get("/jobs?" + q)
            self.assert_error(r, 400, "invalid_request", mentions="cursor")


# An optional object that a value tried lives in, as it is sent around that value when the
# request has none: valid whatever member is tried (dedup: "active" takes any seconds in
# bounds, and seconds 1 suits every mode the enum case tries).
PARENTS = {"dedup": {"key": "k", "mode": "active", "seconds": 1}}


def put(body, where, value):
    """Set the value at where ("body.jobs[].queue", "body.requires[]") in body; an array on
    the way is made one element long, or its first element is used; an object on the way
    that is not there is made from PARENTS."""
    toks = re.findall(r"\[\]|[^.\[\]]+", where)[1:]
    cur = body
    for i, tok in enumerate(toks):
        last = i == len(toks) - 1
        if tok == "[]":
            if last:
                cur[:] = [value]
                return
            cur = cur[0]
        elif last:
            cur[tok] = value
        else:
            if toks[i + 1] == "[]" and not cur.get(tok):
                cur[tok] = [None]
            elif tok not in cur:
                cur[tok] = copy.deepcopy(PARENTS[tok])
            cur = cur[tok]


def drop(body, where):
    """Remove the member at where ("body.payload", "body.jobs[].payload") from body; in an
    object on the way that is not there, from one made from PARENTS (the other members
    sent)."""
    toks = re.findall(r"\[\]|[^.\[\]]+", where)[1:]
    cur = body
    for tok in toks[:-1]:
        if tok != "[]" and tok not in cur:
            cur[tok] = copy.deepcopy(PARENTS[tok])
        cur = cur[0] if tok == "[]" else cur[tok]
    cur.pop(toks[-1], None)


def field_name(where):
    """The name the server's message gives the value at where: "jobs[0].queue" for
    body.jobs[].queue, "requires" for body.requires[], "limit" for query.limit."""
    name = where.split(".", 1)[1]
    while name.endswith("[]"):
        name = name[:-2]
    return name.replace("[]", "[0]")


class SpecRequests(ServerTest):
    """Requests built from openapi.yaml's operations (no tests of its own): a request of each
    operation that the server accepts as it is, with values set or left out."""

    @classmethod
    def setUpClass(cls):
        cls.doc = openapi_spec.load(OPENAPI)
        super().setUpClass()

    def fresh(self, op):
        """(method, path, query, body) of a request of op that the server accepts as it is,
        with whatever it needs done first (a job to claim, a lease)."""
        q = self.q
        if op in ("POST /jobs/{id}/heartbeat", "POST /jobs/{id}/complete",
                  "POST /jobs/{id}/fail", "POST /jobs/{id}/snooze"):
            qn = self.queue("lease%d" % next(self.counter))
            self.enqueue(queue=qn)
            job = self.claim_one(queue=qn)
            body = {"lease_token": job["lease_token"]}
            if op.endswith("/snooze"):
                body["seconds"] = 0  # required
            return ("POST", op.split(" ")[1].replace("{id}", str(job["id"])), {}, body)
        if op == "POST /claim":
            self.enqueue()  # due: a claim with wait_seconds answers at once
            return "POST", "/claim", {}, {"worker_id": "w", "queue": q}
        plain = {
            "POST /jobs": ("POST", "/jobs", {}, {"queue": q, "payload": 1}),
            "POST /jobs/batch": ("POST", "/jobs/batch", {}, {"jobs": [{"queue": q,
                                                                      "payload": 1}]}),
            "GET /jobs": ("GET", "/jobs", {}, None),
            "GET /events": ("GET", "/events", {}, None),
            "DELETE /queues/{name}/jobs": ("DELETE", "/queues/{name}/jobs",
                                           {"status": "succeeded"}, None),
            "POST /queues/{name}/pause": ("POST", "/queues/{name}/pause", {}, None),
            "POST /queues/{name}/resume": ("POST", "/queues/{name}/resume", {}, None),
            "PUT /limits/{key}": ("PUT", "/limits/" + q + ":k", {},
                                  {"max_running": 1, "rate": {"jobs": 1, "per_seconds": 1}}),
            "GET /limits/{key}": ("GET", "/limits/" + q + ":k", {}, None),
            "DELETE /limits/{key}": ("DELETE", "/limits/" + q + ":k", {}, None),
            "PUT /schedules/{name}": ("PUT", "/schedules/" + q, {},
                                      {"every_seconds": 86400, "job": {"queue": q,
                                                                       "payload": 1}}),
            "GET /schedules/{name}": ("GET", "/schedules/" + q, {}, None),
            "DELETE /schedules/{name}": ("DELETE", "/schedules/" + q, {}, None),
            # 203.0.113.10: a documentation address, public, that never answers.
            "PUT /webhooks/{name}": ("PUT", "/webhooks/" + q, {},
                                     {"url": "http://203.0.113.10/hook"}),
            "GET /webhooks/{name}": ("GET", "/webhooks/" + q, {}, None),
            "DELETE /webhooks/{name}": ("DELETE", "/webhooks/" + q, {}, None),
        }
        if op not in plain:
            self.fail("SchemaLimits does not know how to send %s: add it to fresh()" % op)
        method, path, query, body = copy.deepcopy(plain[op])
        return method, path.replace("{name}", q), query, body

    def send(self, op, values=(), absent=(), empty=False):
        """Send op with each (where, value) of values set, the values at `absent` left out,
        and no body at all when empty. Returns the Response."""
        method, path, body = self.build(op, values, absent)
        if empty:
            return self.c.request(method, path, raw=b"",
                                  headers={"Content-Type": "application/json"})
        if op == "GET /events":  # the JSON page: a stream would not end
            return self.c.request(method, path, headers={"Accept": "application/json"})
        return self.c.request(method, path, body=body)

    def build(self, op, values=(), absent=()):
        """(method, path with its query, body) of op with each (where, value) of values set
        and the values at `absent` left out, as send() sends it."""
        if not hasattr(self, "counter"):
            self.counter = itertools.count()
        method, path, query, body = self.fresh(op)
        for w in list(absent) + [w for w, _ in values]:
            # A dedup the value lives in: one the server takes whatever the value (debounce
            # takes seconds 0; a key of its own each time).
            m = re.match(r"^(body(?:\.jobs\[\]|\.job)?)\.dedup\.", w)
            if m:
                put(body, m.group(1) + ".dedup", {"key": "d%d" % next(self.counter),
                                                   "mode": "debounce", "seconds": 1})
        if op in ("GET /schedules/{name}", "DELETE /schedules/{name}"):
            # The schedule must exist for an accepted name to answer 200: put it first.
            for where, value in values:
                if where == "path.name":
                    self.c.request("PUT", "/schedules/" + urllib.parse.quote(str(value), safe=""),
                                   body={"every_seconds": 86400, "job": {"payload": 1}})
            if not values:
                self.c.request("PUT", path, body={"every_seconds": 86400, "job": {"payload": 1}})
        if op in ("GET /webhooks/{name}", "DELETE /webhooks/{name}"):
            # The subscription must exist for an accepted name to answer 200: put it first.
            hook = {"url": "http://203.0.113.10/hook"}
            for where, value in values:
                if where == "path.name":
                    self.c.request("PUT", "/webhooks/" + urllib.parse.quote(str(value), safe=""),
                                   body=hook)
            if not values:
                self.c.request("PUT", path, body=hook)
        if op in ("GET /limits/{key}", "DELETE /limits/{key}"):
            # The limit must exist for an accepted key to answer 200: put it first (a key the
            # server refuses is refused by the PUT too).
            for where, value in values:
                if where == "path.key":
                    self.c.request("PUT", "/limits/" + urllib.parse.quote(str(value), safe=""),
                                   body={"max_running": 1})
        for w in absent:
            if w.startswith("query."):
                query.pop(w[6:], None)
            else:
                drop(body, w)
        for where, value in values:
            value = self.real_deps(where, value)
            if where.startswith("query."):
                query[where[6:]] = value
            elif where.startswith("path."):
                param = urllib.parse.quote(str(value), safe="")
                path = op.split(" ")[1].replace("{%s}" % where[5:], param)
            else:
                put(body, where, value)
        if query:
            path += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        return method, path, body

    def real_deps(self, where, value):
        """A depends_on value with the ids the schema's samples give (0, 1, 2...) made ids of
        jobs that exist (an accepted depends_on names existing jobs); an id below the
        minimum as it is."""
        if "depends_on" not in where:
            return value
        if not getattr(self, "dep_pool", None):
            qn = self.queue("deps")
            self.dep_pool = []
            for _ in range(2):
                r = self.c.post("/jobs/batch", {"jobs": [{"queue": qn, "payload": 1}] * 600})
                self.assertEqual(r.status, 201, r)
                self.dep_pool += [j["id"] for j in r.json["jobs"]]
        if isinstance(value, list):
            return [self.dep_pool[v] if isinstance(v, int) and 0 <= v < len(self.dep_pool)
                    else v for v in value]
        return self.dep_pool[0] if isinstance(value, int) and value >= 1 else value


class SchemaLimits(SpecRequests):
    """Driven by openapi.yaml: every value a client sends, at each limit its schema states
    (accepted) and just past it (400 invalid_request naming the field; a NUL also named as
    such), each required value left out, and each pair the schema forbids together. So a
    client or tester generated from the document meets no refusal it was not told of.
    openapi.limits checks that the document's limits are the server's constants; this checks
    that the server answers by them."""

    def check(self, op, where, label, r, accepted, names=None):
        """r answers a request that sent the case `label` of the value at where: accepted or
        refused naming the field (and `names` too, when given)."""
        with self.subTest(op=op, where=where, case=label):
            if where.startswith("path.") and label == "empty":
                self.assert_error(r, 404, "not_found")  # another path: /queues//pause
            elif not accepted and where.startswith("path.") and op in LOOKUPS:
                self.assert_error(r, 404, "not_found")  # no schedule or limit can be named so
            elif not accepted:
                self.assert_error(r, 400, "invalid_request", mentions=field_name(where))
                if names:
                    self.assertIn(names, r.json["error"]["message"], r)
            elif where.endswith(".lease_token"):
                self.assert_error(r, 409, "lease_lost")  # read, but not the claim's token
            else:
                self.assertIn(r.status, (200, 201), r)

    @staticmethod
    def valid(schema, i):
        """A value the schema accepts that the server takes too: an expires_at after now."""
        v = openapi_spec.sample(schema, i)
        if isinstance(v, int) and schema.get("maximum") == RUN_AT_BOUND - 1:
            v = now() + 3600
        return v

    @staticmethod
    def offender(where, value):
        """What the refusal of a string off its pattern must name: a NUL in a body string as
        such, a space in a name as the character and where (a cursor is opaque, a time zone
        is refused as not a zone name, an event type list names the element that is no
        type; a trace context is refused as not W3C's)."""
        if not isinstance(value, str) or where in ("query.cursor", "body.timezone",
                                                   "query.types") or \
                where.endswith((".traceparent", ".tracestate")):
            return None  # refused whole: not a W3C trace context
        if "\0" in value and where.startswith("body"):
            return "NUL"
        if value == "a b":
            return "' ' at byte 1"
        return None

    def test_every_request_value_at_and_past_its_limits(self):
        self.counter = itertools.count()
        fill = {"queue": self.q}
        tried = set()
        fields = list(openapi_spec.request_fields(self.doc))
        # The members each object forbids together, both ways round: (op, where) -> other.
        others = {}
        for op, where, schema, _ in fields:
            for pair in openapi_spec.together_pairs(schema):
                for a, b in ((pair[0], pair[1]), (pair[1], pair[0])) if len(pair) == 2 else ():
                    others[(op, "%s.%s" % (where, a))] = "%s.%s" % (where, b)
        for op, where, schema, required in fields:
            if where == "path.id":
                continue  # an id out of range is an unknown job: 404 (test_unknown_paths)
            if where == "body":
                if required:
                    # The first member it requires, or of its first anyOf alternative.
                    first = (schema.get("required") or schema["anyOf"][0]["required"])[0]
                    r = self.send(op, empty=True)
                    self.check(op, "body." + first, "no body", r, False)
            elif required and not where.startswith("path."):
                r = self.send(op, absent=(where,))
                self.check(op, where, "left out", r, False)
            for together in openapi_spec.together_pairs(schema):
                props = schema.get("properties", {})
                r = self.send(op, [("%s.%s" % (where, name), self.valid(props[name], 1))
                                   for name in together])
                self.check(op, "%s.%s" % (where, together[0]), "with " + together[1], r, False)
            for label, value, accepted in openapi_spec.boundary_cases(schema, fill):
                tried.add((op, where))
                absent = tuple(b for (o, a), b in others.items()
                               if o == op and (where == a or where.startswith(a + "[]")))
                if where.endswith(".expires_at") and value < now() + 1:
                    accepted = False  # in bounds, but not after now (the schema says so)
                if accepted and (where in ("body.cron", "body.timezone") or
                                 op == "PUT /webhooks/{name}" and
                                 where in ("body.url", "body.secret")):
                    # A cron expression, a zone name, a URL or a whsec_ secret is valid by
                    # its content, which no bound states: only the refusals are tried here
                    # (test_schedules and test_webhooks try valid ones).
                    continue
                r = self.send(op, [(where, value)], absent=absent)
                self.check(op, where, label, r, accepted, self.offender(where, value))
        # The document's bounded values, each tried: a sanity check of the walk itself.
        for must in (("POST /jobs", "body.run_at"), ("POST /jobs/batch", "body.jobs"),
                     ("POST /jobs/batch", "body.jobs[].requires[]"),
                     ("POST /claim", "body.queues[]"), ("POST /jobs/{id}/fail",
                                                         "body.error_code"),
                     ("GET /jobs", "query.cursor"), ("POST /queues/{name}/pause", "path.name"),
                     ("POST /jobs", "body.expires_at"), ("POST /jobs", "body.dedup.seconds"),
                     ("POST /jobs/batch", "body.jobs[].dedup.mode"),
                     ("POST /jobs/batch", "body.jobs[].dedup.seconds"),
                     ("PUT /limits/{key}", "body.rate.per_seconds"),
                     ("GET /limits/{key}", "path.key"), ("DELETE /limits/{key}", "path.key"),
                     ("PUT /schedules/{name}", "body.every_seconds"),
                     ("PUT /schedules/{name}", "body.job.priority"),
                     ("DELETE /schedules/{name}", "path.name"),
                     ("POST /jobs", "body.depends_on"), ("POST /jobs", "body.depends_on[]"),
                     ("POST /jobs/batch", "body.jobs[].depends_on"),
                     ("POST /jobs/batch", "body.jobs[].ref"),
                     ("POST /jobs/batch", "body.jobs[].on_dependency_failure")):
            self.assertIn(must, tried)


class SpecRulesOfNewerEndpoints(SpecRequests):
    """Each rule of the newer endpoints that openapi.yaml states (if/then, required, null as
    absent) against what the server does: the bodies it allows are accepted, the ones it
    refuses are refused."""

    def verdict(self, op, values):
        """Send op with values set and check the server's answer against what the document
        says of the body sent (openapi_spec.valid): 2xx when it accepts it, else 400
        invalid_request naming the first value's field. Returns whether it was accepted."""
        method, path, body = self.build(op, values)
        ok = openapi_spec.valid(openapi_spec.body_schema(self.doc, op), body)
        r = self.c.request(method, path, body=body)
        with self.subTest(op=op, values=values, body=body, document_accepts=ok):
            if ok:
                self.assertIn(r.status, (200, 201), r)
            else:
                self.assert_error(r, 400, "invalid_request", mentions=field_name(values[0][0]))
        return ok

    @staticmethod
    def members(doc):
        """(op, where, merged schema, required) of every member of an object in a request body
        ("body.queue", "body.jobs[].dedup.seconds"; not an array's items)."""
        for op, where, schema, required in openapi_spec.request_fields(doc):
            if where.startswith("body.") and not where.endswith("[]"):
                yield op, where, schema, required

    def test_the_document_lets_every_optional_member_be_null(self):
        """API.md's job, limit and schedule objects show null for what is not set, and the
        server reads a null member as absent (fields.h): every optional member of a request
        body takes null in the document, no required one does, and any-JSON values take
        it as a value."""
        seen = 0
        for op, where, schema, required in self.members(self.doc):
            seen += 1
            with self.subTest(op=op, where=where):
                if "type" not in schema:
                    continue  # any JSON: payload, result, progress, error_detail
                self.assertEqual(bool(schema.get("nullable")), not required, schema)
        self.assertGreater(seen, 80)

    def test_a_null_member_is_absent_as_the_document_says(self):
        """Each member of each request body set to null, and each pair of members refused
        together sent with one of them null: the server accepts exactly what the document
        accepts (a null optional member is absent; a null required one is missing, and so
        is a null every_seconds that a schedule needs)."""
        verdicts = {}  # "METHOD /path where[ with null]" -> whether the document accepted
        for op, where, schema, required in self.members(self.doc):
            verdicts["%s %s" % (op, where)] = self.verdict(op, [(where, None)])
        for op, where, schema, _ in openapi_spec.request_fields(self.doc):
            props = schema.get("properties", {})
            for pair in openapi_spec.together_pairs(schema):
                for a, b in ((pair[0], pair[1]), (pair[1], pair[0])):
                    # A cron expression is valid by its content, which no bound states.
                    v = "0 9 * * MON" if a == "cron" else SchemaLimits.valid(props[a], 1)
                    verdicts["%s %s.%s with null" % (op, where, a)] = self.verdict(
                        op, [("%s.%s" % (where, a), v), ("%s.%s" % (where, b), None)])
        # Both verdicts are met: the walk reached members of each kind.
        expected = {
            True: ("POST /jobs body.priority", "POST /jobs/batch body.jobs[].ref",
                   "POST /jobs body.payload", "POST /claim body.queues",
                   "POST /jobs/{id}/snooze body.pause_key", "PUT /schedules/{name} body.cron",
                   "PUT /schedules/{name} body.job.idempotency_key",
                   "PUT /schedules/{name} body.job.depends_on",
                   "PUT /schedules/{name} body.catch_up",
                   "POST /jobs body.run_at with null", "POST /claim body.queues with null",
                   "PUT /schedules/{name} body.cron with null"),
            False: ("POST /jobs body.dedup.key", "POST /claim body.worker_id",
                    "POST /jobs/{id}/snooze body.seconds", "PUT /limits/{key} body.rate.jobs",
                    "PUT /schedules/{name} body.every_seconds")}
        for ok, musts in expected.items():
            for must in musts:
                self.assertEqual(verdicts.get(must), ok, must)

    def job(self, **fields):
        body = {"queue": self.q, "payload": 1}
        body.update(fields)
        return self.c.post("/jobs", body)

    def answer(self, op, method, path, body=None, status=200):
        """Send a request of op and check that it answers status with a body its schema in
        the document accepts. Returns the body."""
        r = self.c.request(method, path, body)
        schema = openapi_spec.response_schema(self.doc, op, r.status)
        with self.subTest(op=op, status=r.status):
            self.assertEqual(r.status, status, r)
            self.assertIsNotNone(schema, "%s answers %d, which the document lists without a "
                                 "JSON schema" % (op, r.status))
            self.assertTrue(openapi_spec.valid(schema, r.json), r)
        return r.json

    def test_answers_of_the_newer_endpoints_match_their_schemas(self):
        """Batch (refs, dependencies, dedup, keys, expiry), the links, snooze, pause, resume,
        purge, limits and schedules answer what their response schemas say."""
        q = self.q
        b = self.answer("POST /jobs/batch", "POST", "/jobs/batch", {"jobs": [
            {"queue": q, "payload": 1, "ref": "a", "max_runtime_seconds": 60},
            {"queue": q, "payload": {"n": 2}, "depends_on": ["a"], "on_dependency_failure": "run",
             "dedup": {"key": "k", "mode": "window", "seconds": 5}, "concurrency_key": "c",
             "expires_in_seconds": 100, "requires": ["gpu"]}]}, status=201)
        a, d = (j["id"] for j in b["jobs"])
        self.answer("GET /jobs/{id}/dependencies", "GET", "/jobs/%d/dependencies" % d)
        self.answer("GET /jobs/{id}/dependents", "GET", "/jobs/%d/dependents" % a)
        job = self.claim_one()
        self.assertEqual(job["id"], a)
        self.answer("POST /jobs/{id}/snooze", "POST", "/jobs/%d/snooze" % a,
                    {"lease_token": job["lease_token"], "seconds": 0, "pause_key": True})
        self.answer("POST /jobs/{id}/cancel", "POST", "/jobs/%d/cancel" % a)
        self.answer("GET /jobs/{id}", "GET", "/jobs/%d" % d)
        self.answer("GET /jobs/{id}/attempts", "GET", "/jobs/%d/attempts" % a)
        for op, path in (("POST /queues/{name}/pause", "/queues/%s/pause" % q),
                         ("POST /queues/{name}/resume", "/queues/%s/resume" % q),
                         ("POST /queues/{name}/pause", "/queues/%s-empty/pause" % q),
                         ("GET /queues", "/queues")):
            self.answer(op, "GET" if op.startswith("GET") else "POST", path)
        self.answer("DELETE /queues/{name}/jobs", "DELETE", "/queues/%s/jobs?status=queued" % q)
        for key, body in (("%s:c" % q, {"max_running": 2, "rate": {"jobs": 3, "per_seconds": 4}}),
                          ("%s:*" % q, {"max_running": 1, "rate": None})):
            path = "/limits/" + urllib.parse.quote(key, safe="")
            self.answer("PUT /limits/{key}", "PUT", path, body)
            self.answer("GET /limits/{key}", "GET", path)
        self.answer("GET /limits", "GET", "/limits")
        self.answer("DELETE /limits/{key}", "DELETE", "/limits/" + urllib.parse.quote(q + ":*"))
        for name, body in (("%s-c" % q, {"cron": "0 9 * * MON", "timezone": "Europe/Berlin",
                                         "job": {"payload": 1}, "catch_up": "all",
                                         "overlap": "skip", "every_seconds": None}),
                           ("%s-e" % q, {"every_seconds": 3600, "job": {"payload": 1},
                                         "paused": True, "cron": None})):
            s = self.answer("PUT /schedules/{name}", "PUT", "/schedules/" + name, body)
            self.assertEqual("cron" in s, body["cron"] is not None, s)
            self.answer("GET /schedules/{name}", "GET", "/schedules/" + name)
        self.answer("GET /schedules", "GET", "/schedules")
        self.answer("DELETE /schedules/{name}", "DELETE", "/schedules/%s-e" % q)

    def test_a_body_where_none_is_taken_is_still_read(self):
        """Every POST, PUT and DELETE, the ones that take no body included (pause, resume,
        purge, cancel, retry, the deletes of a limit or a schedule): a body of malformed JSON
        is 400 invalid_json, one of another type 415, and the document lists 400, 413 and 415
        for each."""
        job = self.enqueue()
        args = {"id": str(job["id"]), "name": self.q, "key": self.q + ":k"}
        seen = 0
        for op, o, params in openapi_spec.operations(self.doc):
            method, path = op.split(" ")
            if method not in ("POST", "PUT", "DELETE") or path.startswith("/ui"):
                continue
            seen += 1
            path = re.sub(r"\{(\w+)\}", lambda m: args[m.group(1)], path)
            query = {p["name"]: openapi_spec.sample(p["schema"]) for p in params
                     if p["in"] == "query" and p.get("required")}
            if query:
                path += "?" + urllib.parse.urlencode(query)
            with self.subTest(op=op):
                self.assertLessEqual({"400", "413", "415"}, set(o["responses"]), op)
                r = self.c.request(method, path, raw=b'{"a": ',
                                   headers={"Content-Type": "application/json"})
                self.assert_error(r, 400, "invalid_json")
                r = self.c.request(method, path, raw=b"a", headers={"Content-Type": "text/plain"})
                self.assert_error(r, 415, "unsupported_media_type")
        self.assertGreaterEqual(seen, 16)

    def test_dedup_seconds_required_by_mode(self):
        spec = self.doc["components"]["schemas"]
        rules = {r["if"]["properties"]["mode"]["const"]: r["then"]
                 for r in spec["DedupRequest"]["allOf"]}
        self.assertEqual(rules["window"]["required"], ["seconds"])
        self.assertEqual(rules["window"]["properties"]["seconds"]["minimum"], 1)
        self.assertEqual(rules["debounce"]["required"], ["seconds"])
        for mode in ("window", "debounce"):
            r = self.job(dedup={"key": "k-" + mode, "mode": mode})
            self.assert_error(r, 400, "invalid_request", mentions="dedup.seconds")
        r = self.job(dedup={"key": "k-w0", "mode": "window", "seconds": 0})
        self.assert_error(r, 400, "invalid_request", mentions="dedup.seconds")
        for mode, seconds in (("active", None), ("window", 1), ("debounce", 0)):
            d = {"key": "ok-" + mode, "mode": mode}
            if seconds is not None:
                d["seconds"] = seconds
            r = self.job(dedup=d)
            self.assertEqual(r.status, 201, "%s -> %r" % (mode, r))

    def test_debounce_without_run_at_or_delay(self):
        cond = self.doc["components"]["schemas"]["JobBody"]
        self.assertEqual(cond["if"]["properties"]["dedup"]["properties"]["mode"],
                         {"const": "debounce"})
        self.assertEqual([alt["required"] for alt in cond["then"]["not"]["anyOf"]],
                         [["run_at"], ["delay_seconds"]])
        d = {"key": "deb", "mode": "debounce", "seconds": 5}
        for extra in ({"run_at": int(now()) + 60}, {"delay_seconds": 60}, {"delay_seconds": 0},
                      {"run_at": 0}):
            body = dict({"queue": self.q, "payload": 1, "dedup": d}, **extra)
            self.assertFalse(openapi_spec.valid(cond, body), body)
            r = self.job(dedup=d, **extra)
            self.assert_error(r, 400, "invalid_request", mentions="debounce")
        # null is absent: a debounce beside a null run_at or delay_seconds is taken.
        for extra in ({"run_at": None}, {"delay_seconds": None},
                      {"run_at": None, "delay_seconds": None}):
            body = dict({"queue": self.q, "payload": 1, "dedup": d}, **extra)
            self.assertTrue(openapi_spec.valid(cond, body), body)
            r = self.job(dedup=d, **extra)
            self.assertIn(r.status, (200, 201), r)
        self.assertEqual(self.job(dedup=d).status, 200)  # the same key: debounced
        # Other modes take them.
        r = self.job(dedup={"key": "win", "mode": "window", "seconds": 5}, delay_seconds=60)
        self.assertEqual(r.status, 201, r)

    def test_limit_null_is_absent(self):
        lim = self.doc["components"]["schemas"]["LimitRequest"]
        self.assertIn("null", lim["properties"]["rate"]["type"])
        self.assertIn("null", lim["properties"]["max_running"]["type"])
        key = "/limits/" + self.q
        r = self.c.request("PUT", key, {"rate": None, "max_running": 2})
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.json["rate"])
        r = self.c.request("PUT", key, {"max_running": None,
                                        "rate": {"jobs": 1, "per_seconds": 1}})
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.json["max_running"])
        for body in ({"rate": None}, {"max_running": None}, {"rate": None, "max_running": None}):
            r = self.c.request("PUT", key, body)
            self.assert_error(r, 400, "invalid_request", mentions="max_running or rate")

    def test_schedule_body_and_job_must_be_objects(self):
        sched = self.doc["components"]["schemas"]["ScheduleRequest"]
        self.assertEqual(sched["type"], "object")
        for body in ([], "x", 5):
            r = self.c.request("PUT", "/schedules/" + self.q, body)
            self.assert_error(r, 400, "invalid_request")
        r = self.c.request("PUT", "/schedules/" + self.q, {"every_seconds": 60, "job": []})
        self.assert_error(r, 400, "invalid_request", mentions="job")

    def test_lease_tokens_of_any_length_are_read(self):
        """LeaseToken: 1 to 256 bytes; a token no claim gave (even a short one) is 409."""
        tok = self.doc["components"]["schemas"]["LeaseToken"]
        self.assertEqual(tok["minLength"], 1)
        j = self.enqueue()
        self.claim_one()
        for action, extra in (("heartbeat", {}), ("complete", {}), ("fail", {}),
                              ("snooze", {"seconds": 1})):
            body = dict(extra, lease_token="s")
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), body)
            self.assert_error(r, 409, "lease_lost")
            body["lease_token"] = ""
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), body)
            self.assert_error(r, 400, "invalid_request", mentions="lease_token")


class NotFoundAndMethods(ServerTest):
    def test_unknown_paths(self):
        for method, path in (("GET", "/nope"), ("POST", "/nope"),
                             ("GET", "/jobs/abc"), ("GET", "/jobs/0"), ("GET", "/jobs/-1"),
                             ("GET", "/jobs/1.5"), ("GET", "/jobs/99999999999999999999999"),
                             ("POST", "/jobs/1/explode"), ("GET", "/jobs/1/2"),
                             ("POST", "/jobs/abc/complete"), ("GET", "/v1/jobs"),
                             ("GET", "/queuesx"), ("GET", "/healthz/x")):
            r = self.c.request(method, path)
            self.assert_error(r, 404, "not_found")

    def test_unknown_job_on_every_route(self):
        missing = 987654321
        r = self.c.get("/jobs/%d" % missing)
        self.assert_error(r, 404, "not_found")
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (missing, action), {"lease_token": "a" * 32})
            self.assert_error(r, 404, "not_found")
        for action in ("cancel", "retry"):
            r = self.c.post("/jobs/%d/%s" % (missing, action))
            self.assert_error(r, 404, "not_found")

    def assert_405(self, method, path, allowed):
        r = self.c.request(method, path)
        self.assert_error(r, 405, "method_not_allowed")
        allow = r.header("allow")
        self.assertIsNotNone(allow, "405 without Allow: %r" % r)
        got = {m.strip() for m in allow.split(",") if m.strip()}
        self.assertEqual(got, set(allowed), "Allow for %s %s" % (method, path))

    def test_method_not_allowed(self):
        j = self.enqueue()
        jid = j["id"]
        self.assert_405("DELETE", "/jobs/%d" % jid, {"GET"})
        self.assert_405("POST", "/jobs/%d" % jid, {"GET"})
        self.assert_405("PUT", "/jobs", {"GET", "POST"})
        self.assert_405("DELETE", "/jobs", {"GET", "POST"})
        self.assert_405("GET", "/jobs/batch", {"POST"})
        self.assert_405("GET", "/claim", {"POST"})
        self.assert_405("PATCH", "/claim", {"POST"})
        for action in ("heartbeat", "complete", "fail", "cancel", "retry"):
            self.assert_405("GET", "/jobs/%d/%s" % (jid, action), {"POST"})
        self.assert_405("POST", "/queues", {"GET"})
        self.assert_405("POST", "/healthz", {"GET"})
        self.assert_405("PUT", "/readyz", {"GET"})
        self.assert_405("POST", "/metrics", {"GET"})
        self.assertEqual(self.get_job(jid), j)


class LeaseLostConflict(ServerTest):
    def test_wrong_token(self):
        j = self.enqueue()
        c = self.claim_one()
        for action in ("heartbeat", "complete", "fail"):
            for tok in ("A" * 32, c["lease_token"][:-1] + ("x" if c["lease_token"][-1] != "x"
                                                             else "y"), "short"):
                r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": tok})
                self.assert_error(r, 409, "lease_lost")
        g = self.get_job(j["id"])
        self.assertEqual(g["status"], "running")
        self.assertEqual(g["attempts"], 1)

    def test_token_for_queued_job(self):
        j = self.enqueue()
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": "B" * 32})
            self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"])["status"], "queued")

    def test_token_of_other_job(self):
        a = self.enqueue()
        b = self.enqueue()
        ca = self.claim_one()
        cb = self.claim_one()
        self.assertEqual((ca["id"], cb["id"]), (a["id"], b["id"]))
        r = self.c.post("/jobs/%d/complete" % a["id"], {"lease_token": cb["lease_token"]})
        self.assert_error(r, 409, "lease_lost")

    def test_old_token_after_requeue(self):
        j = self.enqueue()
        c1 = self.claim_one()
        self.act(j["id"], "fail", {"lease_token": c1["lease_token"], "retry_in_seconds": 0})
        c2 = self.claim_one()
        self.assertNotEqual(c1["lease_token"], c2["lease_token"])
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": c1["lease_token"]})
            self.assert_error(r, 409, "lease_lost")
        self.act(j["id"], "complete", {"lease_token": c2["lease_token"]})

    def test_conflicts(self):
        j = self.enqueue()
        self.act(j["id"], "cancel")
        r = self.c.post("/jobs/%d/cancel" % j["id"])
        self.assert_error(r, 409, "conflict")
        k = self.enqueue()
        r = self.c.post("/jobs/%d/retry" % k["id"])
        self.assert_error(r, 409, "conflict")


class MediaType(ServerTest):
    def test_text_plain_is_415(self):
        body = b'{"payload": 1}'
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "application/xml",
                      "multipart/form-data; boundary=x"):
            r = self.c.request("POST", "/jobs", raw=body, headers={"Content-Type": ctype})
            self.assert_error(r, 415, "unsupported_media_type")
        r = self.c.request("POST", "/claim", raw=b'{"worker_id": "w"}',
                           headers={"Content-Type": "text/plain"})
        self.assert_error(r, 415, "unsupported_media_type")
        self.assertEqual(self.c.get("/jobs?queue=default").json["jobs"], [])

    def test_json_with_charset_ok(self):
        r = self.c.request("POST", "/jobs", raw=b'{"payload": 1, "queue": "%s"}' % self.q.encode(),
                           headers={"Content-Type": "application/json; charset=utf-8"})
        self.assertEqual(r.status, 201, r)

    def test_no_content_type_is_json(self):
        data = b'{"payload": {"x": 1}, "queue": "%s"}' % self.q.encode()
        req = (b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n"
               b"Connection: close\r\n\r\n" % len(data)) + data
        r = raw_exchange(self.server.port, req)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["payload"], {"x": 1})

    def test_empty_body_is_empty_object(self):
        # POST /jobs with nothing: like {} -> payload missing.
        r = self.c.request("POST", "/jobs", raw=b"", headers={"Content-Length": "0"})
        self.assert_error(r, 400, "invalid_request", mentions="payload")
        r = self.c.request("POST", "/jobs", raw=b"", headers={"Content-Type": "application/json"})
        self.assert_error(r, 400, "invalid_request", mentions="payload")
        r = self.c.request("POST", "/claim", raw=b"")
        self.assert_error(r, 400, "invalid_request", mentions="worker_id")
        j = self.enqueue()
        r = self.c.request("POST", "/jobs/%d/cancel" % j["id"], raw=b"")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "cancelled")
        r = self.c.request("POST", "/jobs/%d/retry" % j["id"], raw=b"",
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "queued")


class BodyLimit(ServerTest):
    server_args = ("--max-body-bytes", "4096")

    def body_of(self, size):
        """A valid POST /jobs body of exactly `size` bytes."""
        head = '{"queue": "%s", "payload": "' % self.q
        tail = '"}'
        pad = size - len(head) - len(tail)
        self.assertGreater(pad, 0)
        return (head + "x" * pad + tail).encode()

    def test_at_limit_ok(self):
        r = self.c.request("POST", "/jobs", raw=self.body_of(4096),
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)

    def test_over_limit_content_length(self):
        for size in (4097, 5000, 200000):
            data = self.body_of(size)
            req = (b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data)) + data
            r = raw_exchange(self.server.port, req)
            self.assert_error(r, 413, "payload_too_large")
        self.assertEqual(self.c.get("/healthz").status, 200)
        self.assertEqual(self.c.get("/jobs?queue=" + self.q).json["jobs"], [])

    def test_over_limit_body_is_read_before_413(self):
        # A client that sends its whole body before reading (most do; no Expect header) must
        # get the 413, not a reset connection: the server reads the body away, then answers.
        data = self.body_of(20000)
        s = socket.create_connection((HOST, self.server.port), timeout=10)
        try:
            s.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(data))
            time.sleep(0.2)
            s.sendall(data[:1000])
            time.sleep(0.2)
            try:
                s.sendall(data[1000:])
            except OSError as e:
                self.fail("the server closed the connection before reading the body: %r" % e)
            r = read_response(s, timeout=10)
        finally:
            s.close()
        self.assert_error(r, 413, "payload_too_large")

    def test_over_limit_chunked(self):
        data = self.body_of(6000)
        chunks = b""
        for i in range(0, len(data), 1000):
            part = data[i:i + 1000]
            chunks += b"%x\r\n" % len(part) + part + b"\r\n"
        chunks += b"0\r\n\r\n"
        req = (b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n") + chunks
        r = raw_exchange(self.server.port, req)
        self.assert_error(r, 413, "payload_too_large")
        # A small chunked body is fine.
        small = b'{"queue": "%s", "payload": 7}' % self.q.encode()
        req = (b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               + b"%x\r\n" % len(small) + small + b"\r\n0\r\n\r\n")
        r = raw_exchange(self.server.port, req)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["payload"], 7)

    def test_batch_over_limit(self):
        body = {"jobs": [{"queue": self.q, "payload": "y" * 100} for _ in range(60)]}
        r = self.c.post("/jobs/batch", body)
        self.assert_error(r, 413, "payload_too_large")
        self.assertEqual(self.c.get("/jobs?queue=" + self.q).json["jobs"], [])


if __name__ == "__main__":
    unittest.main()
