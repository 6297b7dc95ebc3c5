"""Limit objects (API.md "Flow control"): PUT/GET/DELETE /limits/{key} and GET /limits, the
limit object's fields, every bad input named, URL-encoded keys, `running` (jobs of the
keys a limit governs that run now), `window_used` (an exact key's claims in its rate window)
and `held` (due jobs of the keys it governs that a claim passed by for want of room). Limits are server-wide: each test uses keys under its own
prefix (self.q). Both backends."""

import unittest
from urllib.parse import quote

from harness import ServerTest

LIMIT_FIELDS = {"key", "max_running", "rate", "running", "paused_until", "window_used", "held"}


def path(key):
    return "/limits/" + quote(key, safe="")


class Limits(ServerTest):
    def put(self, key, body, status=200):
        r = self.c.request("PUT", path(key), body)
        self.assertEqual(r.status, status, "PUT %s %r -> %r" % (key, body, r))
        if status == 200:
            self.assert_limit(r.json)
        return r

    def mine(self):
        r = self.c.get("/limits")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(set(r.json), {"limits"})
        for l in r.json["limits"]:
            self.assert_limit(l)
        return [l for l in r.json["limits"] if l["key"].startswith(self.q)]

    def assert_limit(self, l):
        self.assertEqual(set(l), LIMIT_FIELDS, l)
        self.assertIsInstance(l["key"], str)
        self.assertTrue(l["max_running"] is None or type(l["max_running"]) is int, l)
        if l["rate"] is not None:
            self.assertEqual(set(l["rate"]), {"jobs", "per_seconds"}, l)
        self.assertIs(type(l["running"]), int, l)
        self.assertTrue(l["paused_until"] is None or type(l["paused_until"]) is int, l)
        self.assertTrue(l["window_used"] is None or type(l["window_used"]) is int, l)
        self.assertIs(type(l["held"]), int, l)

    def test_crud(self):
        k = self.q + ":a"
        r = self.put(k, {"max_running": 2})
        self.assertEqual(r.json, {"key": k, "max_running": 2, "rate": None, "running": 0,
                                  "paused_until": None, "window_used": None, "held": 0})
        r = self.c.get(path(k))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["max_running"], 2)
        # A PUT replaces the whole limit: max_running left out is gone.
        r = self.put(k, {"rate": {"jobs": 5, "per_seconds": 60}})
        self.assertEqual((r.json["max_running"], r.json["rate"]),
                         (None, {"jobs": 5, "per_seconds": 60}))
        self.assertEqual(self.c.get(path(k)).json["rate"], {"jobs": 5, "per_seconds": 60})
        r = self.c.request("DELETE", path(k))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["key"], k)
        self.assertEqual(r.json["rate"], {"jobs": 5, "per_seconds": 60})
        self.assert_error(self.c.get(path(k)), 404, "not_found")
        self.assert_error(self.c.request("DELETE", path(k)), 404, "not_found")
        self.assertEqual(self.mine(), [])

    def test_both_bounds(self):
        k = self.q + ":both"
        r = self.put(k, {"max_running": 100000, "rate": {"jobs": 100000, "per_seconds": 86400}})
        self.assertEqual((r.json["max_running"], r.json["rate"]),
                         (100000, {"jobs": 100000, "per_seconds": 86400}))

    def test_list_is_ordered_by_key(self):
        keys = [self.q + s for s in (":b", ":a*", ":a", ":a/z", ":A", ":a:1")]
        for k in keys:
            self.put(k, {"max_running": 1})
        got = [l["key"] for l in self.mine()]
        self.assertEqual(got, sorted(keys, key=lambda s: s.encode()))

    def test_unknown_keys_are_404(self):
        for k in (self.q + ":none", self.q + ":none*", self.q + "/x:y"):
            self.assert_error(self.c.get(path(k)), 404, "not_found")
            self.assert_error(self.c.request("DELETE", path(k)), 404, "not_found")

    def test_encoded_keys_with_slash_colon_and_star(self):
        for k in (self.q + "/tenant:42/api", self.q + "/x y?#%*", self.q + "/\u00e9t\u00e9"):
            r = self.put(k, {"max_running": 3})
            self.assertEqual(r.json["key"], k)
            r = self.c.get(path(k))
            self.assertEqual((r.status, r.json.get("key")), (200, k), r)
        # '/' and ':' need no encoding: the key is the rest of the path.
        k = self.q + "/a:b/c"
        r = self.c.request("PUT", "/limits/" + k, {"max_running": 1})
        self.assertEqual((r.status, r.json.get("key")), (200, k), r)
        self.assertEqual(self.c.get(path(k)).json["key"], k)
        self.assertIn(k, [l["key"] for l in self.mine()])

    def test_bad_input_names_the_field(self):
        k = self.q + ":bad"
        cases = [
            ({}, "max_running or rate"),
            ({"max_running": None, "rate": None}, "max_running or rate"),
            ({"max_running": 0}, "max_running"),
            ({"max_running": 100001}, "max_running"),
            ({"max_running": "2"}, "max_running"),
            ({"max_running": 1.5}, "max_running"),
            ({"rate": {"jobs": 0, "per_seconds": 1}}, "rate.jobs"),
            ({"rate": {"jobs": 100001, "per_seconds": 1}}, "rate.jobs"),
            ({"rate": {"jobs": 1, "per_seconds": 0}}, "rate.per_seconds"),
            ({"rate": {"jobs": 1, "per_seconds": 86401}}, "rate.per_seconds"),
            ({"rate": {"jobs": 1}}, "rate.per_seconds"),
            ({"rate": {"per_seconds": 1}}, "rate.jobs"),
            ({"rate": {}}, "rate.jobs"),
            ({"rate": 5}, "rate"),
            ({"rate": {"jobs": "1", "per_seconds": 1}}, "rate.jobs"),
            ({"max_running": True}, "max_running"),
        ]
        for body, field in cases:
            r = self.c.request("PUT", path(k), body)
            self.assert_error(r, 400, "invalid_request", field)
        r = self.c.request("PUT", path(k), raw=b"[1]",
                           headers={"Content-Type": "application/json"})
        self.assert_error(r, 400, "invalid_request")
        for bad in ("k" * 201, self.q + "*x", self.q + "**", "*" + self.q):
            r = self.c.request("PUT", path(bad), {"max_running": 1})
            self.assert_error(r, 400, "invalid_request", "key")
        r = self.c.request("PUT", "/limits/" + self.q + "%FF", {"max_running": 1})
        self.assert_error(r, 400, "invalid_request", "key")
        self.assertEqual(self.mine(), [], "a refused request created nothing")

    def test_get_and_delete_of_a_key_that_cannot_exist_are_404(self):
        # No limit can have such a key, so none is found (PUT names the field, above).
        bad = [path(k) for k in ("k" * 201, self.q + "*x", self.q + "**", "*" + self.q)]
        for p in bad + ["/limits/" + self.q + "%FF"]:
            self.assert_error(self.c.get(p), 404, "not_found")
            self.assert_error(self.c.request("DELETE", p), 404, "not_found")

    def test_key_of_200_bytes(self):
        k = (self.q + ":" + "k" * 200)[:200]
        self.put(k, {"max_running": 1})
        self.assertEqual(self.c.get(path(k)).json["key"], k)
        p = k[:199] + "*"
        self.assertEqual(self.put(p, {"max_running": 1}).json["key"], p)

    def test_running_counts_jobs_of_the_key(self):
        k = self.q + ":t1"
        self.put(k, {"max_running": 5})
        self.put(self.q + ":*", {"max_running": 5})
        self.put(self.q + ":x*", {"max_running": 5})
        self.enqueue(concurrency_key=k)
        self.enqueue(concurrency_key=self.q + ":t2")
        self.enqueue(concurrency_key=self.q + ":t3")
        self.enqueue(concurrency_key=self.q + ":x1")
        self.enqueue()  # no key
        for _ in range(5):
            self.claim_one()
        self.enqueue(concurrency_key=self.q + ":t4")  # queued, not running
        self.assertEqual(self.c.get(path(k)).json["running"], 1)
        # The pattern counts the keys it governs: not t1 (an exact limit), nor x1 (a longer
        # pattern).
        self.assertEqual(self.c.get(path(self.q + ":*")).json["running"], 2)
        self.assertEqual(self.c.get(path(self.q + ":x*")).json["running"], 1)
        got = {l["key"]: l["running"] for l in self.mine()}
        self.assertEqual(got, {k: 1, self.q + ":*": 2, self.q + ":x*": 1})
        # A PUT and a DELETE answer with the count too.
        self.assertEqual(self.put(k, {"max_running": 9}).json["running"], 1)
        r = self.c.request("DELETE", path(self.q + ":x*"))
        self.assertEqual(r.json["running"], 1)
        # x1 now falls under the shorter pattern.
        self.assertEqual(self.c.get(path(self.q + ":*")).json["running"], 3)
        for l in self.mine():
            self.assertIsNone(l["paused_until"])

    def test_window_used_counts_claims_of_an_exact_key(self):
        k = self.q + ":w"
        r = self.put(k, {"rate": {"jobs": 3, "per_seconds": 3600}})
        self.assertEqual(r.json["window_used"], 0)
        self.put(self.q + ":*", {"rate": {"jobs": 3, "per_seconds": 3600}})
        for key in (k, k, self.q + ":other"):
            self.enqueue(concurrency_key=key)
        for _ in range(3):
            self.claim_one()
        self.assertEqual(self.c.get(path(k)).json["window_used"], 2)
        # A pattern's keys have a window each: none is shown for the pattern.
        self.assertIsNone(self.c.get(path(self.q + ":*")).json["window_used"])
        # Without a rate there is no window.
        self.assertIsNone(self.put(k, {"max_running": 5}).json["window_used"])

    def test_held_counts_due_jobs_a_claim_passed_by(self):
        k, p = self.q + ":solo", self.q + ":h*"
        self.put(k, {"max_running": 1})
        self.put(p, {"max_running": 1})
        for key in (k, k, k, self.q + ":h2", self.q + ":h2", self.q + ":h3"):
            self.enqueue(concurrency_key=key)
        self.enqueue(concurrency_key=k, run_at=2000000000)  # not due: never held
        self.assertEqual(self.c.get(path(k)).json["held"], 0)  # no claim looked yet
        got = [self.claim_one()["concurrency_key"] for _ in range(3)]
        self.assertEqual(sorted(got), sorted([k, self.q + ":h2", self.q + ":h3"]))
        r = self.c.post("/claim", {"worker_id": "w", "queue": self.q, "max_jobs": 5})
        self.assertEqual(r.json["jobs"], [], r)
        held = {l["key"]: l["held"] for l in self.mine()}
        self.assertEqual(held, {k: 2, p: 1})
        # The limit gone, its jobs are free: nothing is held back any more.
        self.c.request("DELETE", path(k))
        self.assertEqual(self.mine()[0]["held"], 1)

    def test_delete_releases_nothing_held_back(self):
        # Jobs of a key with a limit stay claimable once the limit is gone.
        k = self.q + ":rel"
        self.put(k, {"max_running": 1})
        self.enqueue(concurrency_key=k)
        self.c.request("DELETE", path(k))
        self.assertEqual(self.claim_one()["concurrency_key"], k)

    def test_methods(self):
        r = self.c.request("POST", path(self.q + ":m"), {"max_running": 1})
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.header("allow"), "DELETE, GET, PUT")
        r = self.c.request("DELETE", "/limits")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(self.c.get("/limits/").status, 404)


if __name__ == "__main__":
    unittest.main()
