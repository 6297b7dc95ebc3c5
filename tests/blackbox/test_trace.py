"""Trace context (API.md "Events, webhooks and trace context"): POST /jobs and /jobs/batch take
the W3C traceparent and tracestate headers (an invalid one ignored, as W3C asks) or the body
fields (invalid: 400; the body wins); the job keeps them through GET, list, claim, a retry and
the job's events; a schedule's job may not carry one."""

import unittest

from harness import ServerTest, wait_until

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
TS = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"


class TraceTest(ServerTest):
    server_args = ["--sweep-interval", "1"]

    def post(self, path, body, **headers):
        return self.c.post(path, body, headers=headers)

    def test_header_is_kept_and_shown_by_get_list_claim_and_events(self):
        r = self.post("/jobs", {"queue": self.q, "payload": 1},
                      traceparent=TP, tracestate=TS)
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json["traceparent"], r.json["tracestate"]), (TP, TS))
        jid = r.json["id"]
        j = self.get_job(jid)
        self.assertEqual((j["traceparent"], j["tracestate"]), (TP, TS))
        listed = [x for x in self.list_all("queue=" + self.q) if x["id"] == jid]
        self.assertEqual(listed[0]["traceparent"], TP)
        claimed = self.claim_one()
        self.assertEqual((claimed["traceparent"], claimed["tracestate"]), (TP, TS))
        self.act(jid, "fail", {"lease_token": claimed["lease_token"], "retry": False})
        self.act(jid, "retry")  # a retry keeps the trace of the request that made the job
        self.assertEqual(self.get_job(jid)["traceparent"], TP)
        # On PostgreSQL a page shows an event once every older transaction of the cluster
        # has ended (docs/events.md): other tests' transactions may hold it back a while.
        page = {}

        def four():
            r = self.c.get("/events?after=0&limit=1000&job=%d" % jid,
                           headers={"Accept": "application/json"})
            self.assertEqual(r.status, 200, r)
            page["events"] = r.json["events"]
            return len(page["events"]) >= 4
        wait_until(four, 30, what="the job's four events")
        types = [e["type"] for e in page["events"]]
        self.assertEqual(types, ["job.created", "job.claimed", "job.failed", "job.retried"])
        self.assertEqual({e["traceparent"] for e in page["events"]}, {TP})

    def test_invalid_header_is_ignored(self):
        for tp in ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                   "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                   "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                   "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                   TP + "-x", "nonsense"):
            r = self.post("/jobs", {"queue": self.q, "payload": 1},
                          traceparent=tp, tracestate=TS)
            self.assertEqual(r.status, 201, r)
            self.assertEqual((r.json["traceparent"], r.json["tracestate"]), (None, None), tp)
        # A valid traceparent keeps, an invalid tracestate beside it is dropped.
        r = self.post("/jobs", {"queue": self.q, "payload": 1},
                      traceparent=TP, tracestate="Bad Key=1")
        self.assertEqual((r.json["traceparent"], r.json["tracestate"]), (TP, None))
        r = self.post("/jobs", {"queue": self.q, "payload": 1}, tracestate=TS)
        self.assertEqual((r.json["traceparent"], r.json["tracestate"]), (None, None))

    def test_body_field_wins_and_an_invalid_one_is_400(self):
        r = self.post("/jobs", {"queue": self.q, "payload": 1, "traceparent": TP2},
                      traceparent=TP, tracestate=TS)
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json["traceparent"], r.json["tracestate"]), (TP2, None))
        for body, mention in (({"traceparent": "00-abc"}, "traceparent"),
                              ({"traceparent": TP.upper()}, "traceparent"),
                              ({"traceparent": 5}, "traceparent"),
                              ({"traceparent": TP, "tracestate": "a=1,a=2"}, "tracestate"),
                              ({"traceparent": TP, "tracestate": "k=" + "v" * 600},
                               "tracestate"),
                              ({"tracestate": TS}, "tracestate")):
            body.update(queue=self.q, payload=1)
            r = self.post("/jobs", body)
            self.assert_error(r, 400, "invalid_request", mention)
        r = self.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": 1},
                                               {"queue": self.q, "payload": 2,
                                                "traceparent": "bad"}]})
        self.assert_error(r, 400, "invalid_request", "jobs[1].traceparent")

    def test_batch_header_applies_to_elements_without_their_own(self):
        r = self.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 1},
            {"queue": self.q, "payload": 2, "traceparent": TP2, "tracestate": "k=v"}]},
            traceparent=TP, tracestate=TS)
        self.assertEqual(r.status, 201, r)
        got = [(j["traceparent"], j["tracestate"]) for j in r.json["jobs"]]
        self.assertEqual(got, [(TP, TS), (TP2, "k=v")])
        self.assertEqual(self.get_job(r.json["jobs"][1]["id"])["tracestate"], "k=v")

    def test_schedule_job_may_not_carry_one(self):
        r = self.c.request("PUT", "/schedules/" + self.q,
                           {"every_seconds": 60, "job": {"queue": self.q, "payload": 1,
                                                         "traceparent": TP}})
        self.assert_error(r, 400, "invalid_request", "job.traceparent")


if __name__ == "__main__":
    unittest.main()
