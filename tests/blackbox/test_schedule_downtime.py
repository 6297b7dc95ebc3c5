"""Schedules across a jobqd stop or crash (API.md "Schedules"): catch_up none/latest/all of
the ticks missed while no jobqd ran, after a clean stop (every missed tick is missed) and
after a SIGKILL (the tick right after the last pass may still come). Both backends.

Split from test_schedules (the shared helpers are there) so that it holds no lock under
parallel ctest: it asserts which ticks exist, never how late one came (an on-time tick is
always enqueued, however late the ticker runs: server/domain/schedule.h), so a busy neighbour
cannot fail it, and its seconds of downtime are spent beside other tests, not in the chain of
the lock "load" (CONTRIBUTING.md "The suite's time")."""

import time
import unittest

from harness import wait_until
from test_schedules import Base, metric


class CatchUp(Base):
    """Ticks missed while no jobqd ran: stop jobqd for several ticks, restart it."""
    server_per_test = True

    def test_none_latest_all(self):
        policies = ("none", "latest", "all")
        for p in policies:
            self.put("%s.%s" % (self.q, p), {"every_seconds": 1, "catch_up": p,
                                             "job": {"queue": "%s.%s" % (self.q, p),
                                                     "payload": p}})
        for p in policies:
            wait_until(lambda: self.jobs_of("%s.%s" % (self.q, p)), 10, what="a first tick")
        self.c.close()
        self.server.stop_checked()
        time.sleep(6)  # the downtime: about six ticks come due with no jobqd running
        self.server.restart()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        wait_until(lambda: all(len(self.jobs_of("%s.%s" % (self.q, p))) >= 4 for p in policies)
                   and metric(self, "jobq_schedule_ticks_missed_total") is not None, 15,
                   what="ticks after the restart")
        time.sleep(1.5)  # a tick more on each, so the three share the latest tick
        ticks = {}
        for p in policies:
            self.c.request("DELETE", "/schedules/%s.%s" % (self.q, p))
        for p in policies:
            ticks[p] = [t for t, _ in self.ticks_of("%s.%s" % (self.q, p), "%s.%s" % (self.q, p))]
            self.assertEqual(ticks[p], sorted(set(ticks[p])), (p, ticks[p]))

        def gaps(ts):
            return [(a, b) for a, b in zip(ts, ts[1:]) if b - a > 1]
        # all: every tick has its job, the missed ones included.
        self.assertEqual(gaps(ticks["all"]), [], ticks["all"])
        # none: one gap (the missed ticks); latest: the same gap but for its last tick.
        g_none, g_latest = gaps(ticks["none"]), gaps(ticks["latest"])
        self.assertEqual(len(g_none), 1, ticks["none"])
        self.assertEqual(len(g_latest), 1, ticks["latest"])
        self.assertEqual(g_none[0][0], g_latest[0][0], (g_none, g_latest))
        self.assertEqual(g_none[0][1], g_latest[0][1] + 1, (g_none, g_latest))
        missed_none = g_none[0][1] - g_none[0][0] - 1
        self.assertGreaterEqual(missed_none, 2, g_none)
        # What catch_up dropped, counted by the restarted process.
        self.assertEqual(metric(self, "jobq_schedule_ticks_missed_total"),
                         missed_none + missed_none - 1)


class StopAndCrash(Base):
    """Ticks that came due while no jobqd ran (issue 11 section 3): after a clean stop every
    one of them is missed (the stop is marked in the store), and after a crash all but the one
    right after the last pass (which may have come due before the crash)."""
    server_per_test = True

    def down(self, kill, seconds):
        """Stop jobqd (SIGKILL when kill, else SIGTERM) for about `seconds`, start it again.
        Returns (stopped, started): the time the stop was over and the time of the restart."""
        self.c.close()
        if kill:
            self.server.kill9()
        else:
            self.server.stop_checked()
        stopped = time.time()
        time.sleep(seconds)
        started = time.time()
        self.server.restart()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        return stopped, started

    def ticks_after(self, names, after):
        wait_until(lambda: all(any(t >= after for t, _ in self.ticks_of(n, n)) for n in names),
                   10, what="a tick after the restart")
        for n in names:
            self.c.request("DELETE", "/schedules/" + n)
        return {n: [t for t, _ in self.ticks_of(n, n)] for n in names}

    def test_no_tick_after_a_clean_stop(self):
        # every_seconds 2, stopped mid-period: the first tick after the stop came due while
        # nothing ran; "none" enqueues none of the missed ticks, "latest" one.
        names = [self.queue(p) for p in ("none", "latest")]
        for n, p in zip(names, ("none", "latest")):
            self.put(n, {"every_seconds": 2, "catch_up": p, "job": {"queue": n, "payload": 1}})
        wait_until(lambda: all(self.jobs_of(n) for n in names), 10, what="a first tick")
        wait_until(lambda: 0.3 < time.time() % 2 < 1.5, 3, interval=0.01, what="mid-period")
        stopped, started = self.down(False, 5)
        ticks = self.ticks_after(names, int(started) + 2)
        unseen = range(int(stopped) + 1, int(started))  # came due while nothing ran
        none = [t for t in ticks[names[0]] if t in unseen]
        latest = [t for t in ticks[names[1]] if t in unseen]
        self.assertEqual(none, [], (stopped, started, ticks))
        self.assertLessEqual(len(latest), 1, (stopped, started, ticks))

    def test_a_crash_blurs_one_tick_at_most(self):
        # every_seconds 1, SIGKILL: the tick right after the last pass may be enqueued late
        # (it may have come due before the crash), no later one that came due while nothing
        # ran.
        names = [self.queue(p) for p in ("none", "latest")]
        for n, p in zip(names, ("none", "latest")):
            self.put(n, {"every_seconds": 1, "catch_up": p, "job": {"queue": n, "payload": 1}})
        wait_until(lambda: all(len(self.jobs_of(n)) >= 2 for n in names), 10,
                   what="first ticks")
        stopped, started = self.down(True, 5)
        ticks = self.ticks_after(names, int(started) + 1)
        for n in names:
            # The last pass: the last tick enqueued before the restart.
            last = max(t for t, j in self.ticks_of(n, n) if j["created_at"] < int(started))
            unseen = [t for t in ticks[n] if last + 1 < t < int(started)]
            if n == names[0]:
                self.assertEqual(unseen, [], (last, stopped, started, ticks[n]))
            else:
                self.assertLessEqual(len(unseen), 1, (last, stopped, started, ticks[n]))


if __name__ == "__main__":
    unittest.main()
