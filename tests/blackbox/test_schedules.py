"""Schedules (API.md "Schedules"): PUT/GET/DELETE /schedules/{name} and GET /schedules, the
schedule object, every bad input named with nothing created, each tick of every_seconds
enqueued once with idempotency_key "schedule:{name}:{tick}" at most ~1 s late, overlap
"skip", paused schedules, a cron schedule (its minute on a moved clock, on SQLite) and a cron
schedule in a time zone, and the schedule metrics. Both backends; on PostgreSQL also three
jobqd processes sharing one schedule (each tick exactly once). It holds the lock "load" for
the ticks' lateness; catch_up across a jobqd stop or crash, which waits for ticks but bounds
no lateness, is test_schedule_downtime (no lock).

Schedules are server-wide: each test names its schedules and their queues after itself
(self.q)."""

import datetime
import re
import time
import unittest

from harness import WRAPPER, Server, ServerTest, backend, faketime_env, wait_until

SCHEDULE_FIELDS = {"name", "timezone", "job", "catch_up", "overlap", "paused", "next_run_at",
                   "last_run_at", "last_job_id", "created_at", "updated_at"}
LATE = 2  # seconds a tick's job may be created after the tick (the contract's ~1 s, and a
          # second of the shared test machine)
MOVED_TO = 54  # test_cron_every_minute's jobqd starts this many seconds into a minute (SQLite)
PROCESS_TICKS = 12  # ticks that three processes race for (Processes), polled for


def metric(test, name):
    text = test.c.get("/metrics").body.decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def next_utc_tick(after, minutes, hours, doms, months, dows, either):
    """The first minute after `after` (epoch) whose UTC time matches the sets (dows: 0 is
    Sunday); `either`: both day fields restricted, a day matches when one of them does (the
    Vixie day rule), else when both do. A reference for the contract's cron text, searched day
    by day over at most 800 days."""
    start = datetime.datetime.fromtimestamp(after, datetime.timezone.utc)
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    for _ in range(800):
        dom_ok, dow_ok = day.day in doms, (day.weekday() + 1) % 7 in dows
        if day.month in months and ((dom_ok or dow_ok) if either else (dom_ok and dow_ok)):
            for h in sorted(hours):
                for m in sorted(minutes):
                    t = int(day.replace(hour=h, minute=m).timestamp())
                    if t > after:
                        return t
        day += datetime.timedelta(days=1)
    raise AssertionError("no tick within 800 days")


class Base(ServerTest):
    def put(self, name, body, status=200):
        r = self.c.request("PUT", "/schedules/" + name, body)
        self.assertEqual(r.status, status, "PUT %s %r -> %r" % (name, body, r))
        if status == 200:
            self.assert_schedule(r.json)
        return r

    def assert_schedule(self, s):
        self.assertTrue(SCHEDULE_FIELDS <= set(s), s)
        self.assertEqual(("cron" in s) + ("every_seconds" in s), 1, s)
        self.assertIn(s["catch_up"], ("none", "latest", "all"))
        self.assertIn(s["overlap"], ("allow", "skip"))
        self.assertIs(type(s["paused"]), bool)
        for f in ("next_run_at", "last_run_at", "last_job_id"):
            self.assertTrue(s[f] is None or type(s[f]) is int, s)

    def jobs_of(self, queue):
        return self.list_all("queue=" + queue)

    def ticks_of(self, name, queue):
        """The tick of each job of queue enqueued by schedule name, in job order."""
        out = []
        for j in self.jobs_of(queue):
            m = re.fullmatch(r"schedule:%s:(\d+)" % re.escape(name), j["idempotency_key"] or "")
            self.assertIsNotNone(m, j)
            out.append((int(m.group(1)), j))
        return out


class Crud(Base):
    def test_put_get_list_delete(self):
        name = self.q
        job = {"queue": self.q, "payload": {"report": "daily"}, "priority": 3}
        r = self.put(name, {"every_seconds": 3600, "job": job})
        s = r.json
        self.assertEqual(s["name"], name)
        self.assertEqual(s["every_seconds"], 3600)
        self.assertNotIn("cron", s)
        self.assertEqual((s["timezone"], s["catch_up"], s["overlap"], s["paused"]),
                         ("UTC", "latest", "allow", False))
        self.assertEqual(s["job"], job)
        self.assertEqual((s["last_run_at"], s["last_job_id"]), (None, None))
        # The first tick strictly after now, on the epoch's multiples of every_seconds.
        self.assertEqual(s["next_run_at"] % 3600, 0)
        self.assertTrue(0 < s["next_run_at"] - time.time() <= 3600 + 2, s)
        g = self.c.get("/schedules/" + name)
        self.assertEqual(g.status, 200, g)
        self.assertEqual(g.json, s)
        mine = [x for x in self.c.get("/schedules").json["schedules"] if x["name"] == name]
        self.assertEqual(mine, [s])
        # A replace takes the new body.
        r = self.put(name, {"every_seconds": 60, "job": job, "overlap": "skip",
                            "catch_up": "all", "timezone": "UTC"})
        self.assertEqual((r.json["every_seconds"], r.json["overlap"], r.json["catch_up"]),
                         (60, "skip", "all"))
        self.assertEqual(r.json["created_at"], s["created_at"])
        d = self.c.request("DELETE", "/schedules/" + name)
        self.assertEqual(d.status, 200, d)
        self.assertEqual(d.json["name"], name)
        self.assertEqual(d.json["every_seconds"], 60)
        self.assert_error(self.c.get("/schedules/" + name), 404, "not_found")
        self.assert_error(self.c.request("DELETE", "/schedules/" + name), 404, "not_found")

    def test_list_is_ordered_by_name(self):
        names = [self.q + s for s in (".b", ".a", ":z", ".A", "-0")]
        for n in names:
            self.put(n, {"every_seconds": 86400, "job": {"payload": 1}})
        got = [s["name"] for s in self.c.get("/schedules").json["schedules"]
               if s["name"].startswith(self.q)]
        self.assertEqual(got, sorted(names, key=lambda s: s.encode()))
        for n in names:
            self.assertEqual(self.c.request("DELETE", "/schedules/" + n).status, 200)

    def test_paused_has_no_next_run(self):
        r = self.put(self.q, {"every_seconds": 1, "paused": True,
                              "job": {"queue": self.q, "payload": 1}})
        self.assertEqual((r.json["paused"], r.json["next_run_at"]), (True, None))
        time.sleep(2.5)  # ticks that would have come due while paused
        self.assertEqual(self.jobs_of(self.q), [])
        r = self.put(self.q, {"every_seconds": 1, "job": {"queue": self.q, "payload": 1}})
        self.assertIsNotNone(r.json["next_run_at"])
        self.assertTrue(r.json["next_run_at"] > time.time() - 1, r.json)
        wait_until(lambda: self.jobs_of(self.q), 10, what="a job after resume")
        # The skipped ticks are not caught up: every job is a tick after the resume.
        for tick, _ in self.ticks_of(self.q, self.q):
            self.assertGreaterEqual(tick, r.json["next_run_at"])
        self.c.request("DELETE", "/schedules/" + self.q)


class BadInput(Base):
    def bad(self, body, mentions, name=None):
        name = name or self.q
        r = self.c.request("PUT", "/schedules/" + name, body)
        self.assert_error(r, 400, "invalid_request", mentions)
        self.assert_error(self.c.get("/schedules/" + self.q), 404, "not_found")

    def test_bad_bodies(self):
        job = {"payload": 1}
        self.bad({"job": job}, "cron or every_seconds")
        self.bad({"job": job, "every_seconds": 5, "cron": "* * * * *"}, "cron or every_seconds")
        self.bad({"job": job, "every_seconds": 0}, "every_seconds")
        self.bad({"job": job, "every_seconds": 31536001}, "every_seconds")
        self.bad({"job": job, "every_seconds": "5"}, "every_seconds")
        self.bad({"job": job, "every_seconds": 5, "timezone": "Mars/Olympus_Mons"}, "timezone")
        self.bad({"job": job, "every_seconds": 5, "catch_up": "some"}, "catch_up")
        self.bad({"job": job, "every_seconds": 5, "overlap": "queue"}, "overlap")
        self.bad({"job": job, "every_seconds": 5, "paused": "yes"}, "paused")
        self.bad({"every_seconds": 5}, "job")
        self.bad({"every_seconds": 5, "job": [1]}, "job")
        self.bad({"every_seconds": 5, "job": {}}, "job.payload")
        self.bad({"every_seconds": 5, "job": {"payload": 1, "priority": "high"}}, "job.priority")
        self.bad({"every_seconds": 5, "job": {"payload": 1, "queue": "a b"}}, "job.queue")
        self.bad({"every_seconds": 5, "job": {"payload": 1, "delay_seconds": -1}},
                 "job.delay_seconds")
        self.bad({"every_seconds": 5, "job": {"payload": 1, "depends_on": [1]}},
                 "job.depends_on")
        self.bad({"every_seconds": 5, "job": {"payload": 1, "idempotency_key": "k"}},
                 "job.idempotency_key")
        self.bad({"every_seconds": 5, "job": job}, "name", name="a%20b")
        self.bad({"every_seconds": 5, "job": job}, "name", name="n" * 129)

    def test_get_and_delete_of_a_name_that_cannot_exist_are_404(self):
        # No schedule can have such a name, so none is found (PUT names the field, above).
        for name in ("n" * 129, "a%20b", "a%2Fb", "caf%C3%A9", self.q + "%FF"):
            self.assert_error(self.c.get("/schedules/" + name), 404, "not_found")
            self.assert_error(self.c.request("DELETE", "/schedules/" + name), 404, "not_found")
        self.assert_error(self.c.get("/schedules/" + "n" * 128), 404, "not_found")

    def test_bad_cron_names_the_field(self):
        job = {"payload": 1}
        self.bad({"job": job, "cron": "61 * * * *"}, "minute")
        self.bad({"job": job, "cron": "* * * *"}, "cron")
        self.bad({"job": job, "cron": "* * * * MON-XYZ"}, "day-of-week")
        self.bad({"job": job, "cron": ""}, "cron")


class Ticks(Base):
    def test_every_second_each_tick_once(self):
        r = self.put(self.q, {"every_seconds": 1,
                              "job": {"queue": self.q, "payload": {"n": 1}, "max_attempts": 2}})
        first = r.json["next_run_at"]
        wait_until(lambda: len(self.jobs_of(self.q)) >= 4, 15, what="four ticks")
        self.c.request("DELETE", "/schedules/" + self.q)
        ticks = self.ticks_of(self.q, self.q)
        got = [t for t, _ in ticks]
        self.assertEqual(got, list(range(first, first + len(got))), got)
        for t, j in ticks:
            self.assertEqual(j["payload"], {"n": 1})
            self.assertEqual(j["max_attempts"], 2)
            self.assertLessEqual(j["created_at"] - t, LATE, (t, j))
            self.assertGreaterEqual(j["created_at"], t, (t, j))
        s = self.c.request("DELETE", "/schedules/" + self.q)
        self.assertEqual(s.status, 404)  # deleted above; the jobs stay
        self.assertEqual(len(self.jobs_of(self.q)), len(ticks))

    def test_delay_is_resolved_at_each_tick(self):
        r = self.put(self.q, {"every_seconds": 1,
                              "job": {"queue": self.q, "payload": 1, "delay_seconds": 100}})
        wait_until(lambda: len(self.jobs_of(self.q)) >= 2, 15, what="two ticks")
        self.c.request("DELETE", "/schedules/" + self.q)
        for t, j in self.ticks_of(self.q, self.q)[:2]:
            self.assertEqual(j["run_at"], j["created_at"] + 100, j)
        self.assertGreaterEqual(r.json["next_run_at"], 0)

    def test_overlap_skip(self):
        self.put(self.q, {"every_seconds": 1, "overlap": "skip",
                          "job": {"queue": self.q, "payload": 1}})
        before = metric(self, "jobq_schedule_ticks_skipped_total")
        wait_until(lambda: self.jobs_of(self.q), 10, what="the first tick")
        # While its job is queued (and then running) the next ticks are skipped.
        wait_until(lambda: metric(self, "jobq_schedule_ticks_skipped_total") >= before + 2, 10,
                   what="two skipped ticks")
        self.assertEqual(len(self.jobs_of(self.q)), 1)
        job = self.claim_one(queue=self.q)
        wait_until(lambda: metric(self, "jobq_schedule_ticks_skipped_total") >= before + 3, 10,
                   what="a tick skipped while running")
        self.assertEqual(len(self.jobs_of(self.q)), 1)
        self.act(job["id"], "complete", {"lease_token": job["lease_token"]})
        wait_until(lambda: len(self.jobs_of(self.q)) == 2, 10, what="the tick after the end")
        s = self.c.get("/schedules/" + self.q).json
        self.c.request("DELETE", "/schedules/" + self.q)
        newest = max(self.jobs_of(self.q), key=lambda j: j["id"])
        self.assertEqual(s["last_job_id"], newest["id"])
        self.assertEqual("schedule:%s:%d" % (self.q, s["last_run_at"]), newest["idempotency_key"])

    def test_metrics(self):
        before = metric(self, "jobq_schedules")
        self.put(self.q, {"every_seconds": 1, "job": {"queue": self.q, "payload": 1}})
        self.assertEqual(metric(self, "jobq_schedules"), before + 1)
        enq = metric(self, "jobq_schedule_ticks_enqueued_total")
        wait_until(lambda: metric(self, "jobq_schedule_ticks_enqueued_total") >= enq + 2, 10,
                   what="two ticks counted")
        self.c.request("DELETE", "/schedules/" + self.q)
        self.assertEqual(metric(self, "jobq_schedules"), before)
        self.assertIsNotNone(metric(self, "jobq_schedule_ticks_missed_total"))

    def test_cron_every_minute(self):
        # On SQLite the store's clock is jobqd's own: a jobqd of its own whose clock is moved
        # to MOVED_TO seconds into a minute (libfaketime) comes to the minute in a few seconds.
        # On PostgreSQL the store's clock is the database's, which no test moves: the minute
        # would be waited for (up to a minute). Its PostgreSQL store path runs elsewhere with a
        # given now: a put with a cron rule (next_run_at on the store's clock) and the tick
        # that writes the minute's job (unit.pg.store_schedules.put_get_list_delete and
        # tick_is_a_compare_and_swap), and the ticker's pass and ticks on the database's clock
        # in this module's every_seconds cases. Under a wrapper (no libfaketime) it waits.
        if backend() == "pg":
            self.skipTest("the minute on the database's clock: unit.pg.store_schedules")
        offset = 0
        if backend() == "sqlite" and not WRAPPER:
            offset = (MOVED_TO - int(time.time()) % 60) % 60
            srv = Server(env=faketime_env(offset))
            self.addCleanup(srv.cleanup)
            srv.start()
            self.c = srv.client()
            self.addCleanup(self.c.close)
        r = self.put(self.q, {"cron": "* * * * *", "job": {"queue": self.q, "payload": 1}})
        nxt = r.json["next_run_at"]
        self.assertEqual(r.json["cron"], "* * * * *")
        self.assertLessEqual(abs(r.json["created_at"] - (time.time() + offset)), 2, r.json)
        self.assertEqual(nxt % 60, 0)
        self.assertTrue(0 < nxt - (time.time() + offset) <= 61, r.json)
        wait_until(lambda: self.jobs_of(self.q), nxt - (time.time() + offset) + 10,
                   interval=0.2, what="the cron tick")
        self.c.request("DELETE", "/schedules/" + self.q)
        ticks = self.ticks_of(self.q, self.q)
        self.assertEqual(ticks[0][0], nxt)
        self.assertLessEqual(ticks[0][1]["created_at"] - nxt, LATE)
        self.assertGreaterEqual(ticks[0][1]["created_at"], nxt)
        if offset:
            srv.stop_checked()

    def test_macros_names_and_the_day_rule(self):
        every = set(range(60)), set(range(24)), set(range(1, 32)), set(range(1, 13)), set(range(7))
        minutes, hours, doms, months, dows = every
        cases = {
            "@hourly": ({0}, hours, doms, months, dows, False),
            "@daily": ({0}, {0}, doms, months, dows, False),
            "@weekly": ({0}, {0}, doms, months, {0}, False),
            "@monthly": ({0}, {0}, {1}, months, dows, False),
            "@yearly": ({0}, {0}, {1}, {1}, dows, False),
            "30 6 * JAN-MAR,dec MON-FRI": ({30}, {6}, doms, {1, 2, 3, 12}, {1, 2, 3, 4, 5},
                                           False),
            "0 0 * * SUN": ({0}, {0}, doms, months, {0}, False),
            "0 0 * * 7": ({0}, {0}, doms, months, {0}, False),
            "*/20 9-17/4 * * *": ({0, 20, 40}, {9, 13, 17}, doms, months, dows, False),
            # Both day fields restricted: the 13th or a Friday, whichever comes first.
            "0 9 13 * FRI": ({0}, {9}, {13}, months, {5}, True),
            "0 9 1 FEB SAT": ({0}, {9}, {1}, {2}, {6}, True),
        }
        for expr, sets in cases.items():
            before = int(time.time())
            r = self.put(self.q, {"cron": expr, "job": {"payload": 1}})
            after = int(time.time())
            self.assertEqual(r.json["cron"], expr)
            want = {next_utc_tick(t, *sets) for t in (before, after)}
            self.assertIn(r.json["next_run_at"], want, expr)
        self.c.request("DELETE", "/schedules/" + self.q)

    def test_cron_in_a_time_zone(self):
        # 09:30 in Kolkata (UTC+05:30, no daylight saving) is 04:00 UTC.
        r = self.put(self.q, {"cron": "30 9 * * *", "timezone": "Asia/Kolkata",
                              "job": {"payload": 1}})
        self.assertEqual(r.json["timezone"], "Asia/Kolkata")
        self.assertEqual(r.json["next_run_at"] % 86400, 4 * 3600)
        self.assertTrue(0 < r.json["next_run_at"] - time.time() <= 86400 + 2)
        r = self.put(self.q, {"cron": "@hourly", "timezone": "Asia/Kolkata",
                              "job": {"payload": 1}})
        self.assertEqual(r.json["next_run_at"] % 3600, 1800)  # a half-hour zone
        self.c.request("DELETE", "/schedules/" + self.q)


class PutAtTheTick(Base):
    """A PUT that lands a few milliseconds after a tick, before the ticker took it, keeps it:
    an identical PUT just after each whole second loses no tick."""

    def test_an_identical_put_at_the_tick_keeps_it(self):
        body = {"every_seconds": 1, "job": {"queue": self.q, "payload": 1}}
        first = self.put(self.q, body).json["next_run_at"]
        for _ in range(10):
            time.sleep(1 - time.time() % 1 + 0.002)  # 2 ms after a whole second
            self.put(self.q, body)
        last = int(time.time()) - 1
        wait_until(lambda: any(t >= last for t, _ in self.ticks_of(self.q, self.q)), 5,
                   what="the last tick")
        self.c.request("DELETE", "/schedules/" + self.q)
        got = [t for t, _ in self.ticks_of(self.q, self.q)]
        self.assertEqual([t for t in got if t <= last], list(range(first, last + 1)), got)


@unittest.skipUnless(backend() == "pg", "several jobqd processes need PostgreSQL")
class Processes(unittest.TestCase):
    """Three jobqd processes on one PostgreSQL database, one schedule every second for
    PROCESS_TICKS ticks: each tick is enqueued exactly once (no duplicate, no gap)."""

    def test_three_processes_each_tick_once(self):
        first = Server(["--log-level", "debug"])
        servers = [first]
        self.addCleanup(first.cleanup)
        first.start()
        for _ in range(2):
            s = Server(["--log-level", "debug"], db=first.db)
            self.addCleanup(s.cleanup)
            s.start()
            servers.append(s)
        c = servers[1].client()
        self.addCleanup(c.close)
        r = c.request("PUT", "/schedules/multi", {"every_seconds": 1,
                                                  "job": {"queue": "multi", "payload": 1}})
        self.assertEqual(r.status, 200, r)
        start = r.json["next_run_at"]

        def ticked():
            last_run = c.get("/schedules/multi").json["last_run_at"]
            return last_run is not None and last_run >= start + PROCESS_TICKS - 1
        wait_until(ticked, PROCESS_TICKS + 15, interval=0.2, what="%d ticks" % PROCESS_TICKS)
        r = c.request("DELETE", "/schedules/multi")
        self.assertEqual(r.status, 200, r)
        last = r.json["last_run_at"]
        jobs = c.get("/jobs?queue=multi&limit=1000").json["jobs"]
        ticks = sorted(int(j["idempotency_key"].rsplit(":", 1)[1]) for j in jobs)
        self.assertEqual(ticks, list(range(start, last + 1)), ticks)
        self.assertGreaterEqual(len(ticks), PROCESS_TICKS)
        for j in jobs:
            tick = int(j["idempotency_key"].rsplit(":", 1)[1])
            self.assertLessEqual(j["created_at"] - tick, LATE, j)
        # The three processes shared the work (each counts the ticks it created).
        created = []
        for s in servers:
            sc = s.client()
            text = sc.get("/metrics").body.decode()
            sc.close()
            created.append(float(re.search(r"^jobq_schedule_ticks_enqueued_total (\S+)$", text,
                                           re.M).group(1)))
        self.assertEqual(sum(created), len(ticks), created)
        for s in servers:
            s.stop_checked()


if __name__ == "__main__":
    unittest.main()
