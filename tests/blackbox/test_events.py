"""The event log (API.md "Events, webhooks and trace context"; docs/events.md): GET /events as
Server-Sent Events and as a JSON page. A stream opened before the changes sees every
acknowledged change once and in order; Last-Event-ID resumes with nothing missed and nothing
repeated, also after a kill -9 of the process that served the stream and made the changes; the
sweep's bounds show as a `gap`; bad input is a clear 400; the streams are bounded; a draining
server ends them. On PostgreSQL the same with writers and readers on two jobqd processes
sharing one database: both readers see one order, each change once. Every wait is bounded."""

import json
import socket
import threading
import time
import unittest

from harness import HOST, REQUEST_TIMEOUT, Server, ServerTest, backend, wait_until

TYPES = ("job.created", "job.claimed", "job.succeeded")


class Stream:
    """A GET /events stream read from a raw socket: `events` are (id, type, data) as they
    came, ids as ints (None for a gap)."""

    def __init__(self, port, query="", last_id=None):
        self.sock = socket.create_connection((HOST, port), timeout=REQUEST_TIMEOUT)
        hdrs = "GET /events%s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n" % query
        if last_id is not None:
            hdrs += "Last-Event-ID: %s\r\n" % last_id
        self.sock.sendall((hdrs + "\r\n").encode())
        self.buf = b""
        self.status = None
        self.events = []
        self.comments = 0
        self.closed = False

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        if not data:
            self.closed = True
        self.buf += data

    def _parse(self):
        if self.status is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode()
            self.status = int(head.split(" ")[1])
            self.headers = head.lower()
            self.buf = self.buf[end + 4:]
        # chunked transfer: undo it into self.body as chunks complete
        while True:
            line_end = self.buf.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self.buf[:line_end].split(b";")[0], 16)
            if len(self.buf) < line_end + 2 + size + 2:
                return
            chunk = self.buf[line_end + 2:line_end + 2 + size]
            self.buf = self.buf[line_end + 2 + size + 2:]
            self.body = getattr(self, "body", b"") + chunk
            while b"\n\n" in self.body:
                msg, self.body = self.body.split(b"\n\n", 1)
                fields = {}
                for ln in msg.decode().split("\n"):
                    if ln.startswith(":"):
                        self.comments += 1
                        continue
                    k, _, v = ln.partition(": ")
                    fields[k] = v
                if "event" in fields:
                    sid = int(fields["id"]) if "id" in fields else None
                    self.events.append((sid, fields["event"], json.loads(fields["data"])))

    def read_until(self, pred, timeout=30.0, what="events"):
        deadline = time.monotonic() + timeout
        while not pred(self) and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("stream: no %s within %.0f s (got %d events)"
                                     % (what, timeout, len(self.events)))
            self._fill(min(left, 1.0))
            self._parse()
        return self

    def close(self):
        self.sock.close()


def page(c, query):
    r = c.get("/events?" + query, headers={"Accept": "application/json"})
    assert r.status == 200, r
    return r.json


def last_seq(c):
    """The cursor after every event now in the log."""
    after = 0
    for _ in range(10000):
        p = page(c, "after=%d&limit=1000" % after)
        if not p["events"]:
            return p["next"]
        after = p["next"]
    raise AssertionError("the log did not end")


class EventsTest(ServerTest):
    server_args = ["--sweep-interval", "1"]

    def lifecycle(self, n, queue=None):
        """n jobs enqueued, claimed and completed; their ids."""
        ids = [self.enqueue(queue=queue or self.q)["id"] for _ in range(n)]
        for _ in range(n):
            j = self.claim_one(queue=queue or self.q)
            self.act(j["id"], "complete", {"lease_token": j["lease_token"], "result": 1})
        return ids

    def check_once_in_order(self, events, ids):
        seqs = [e[0] for e in events]
        self.assertEqual(seqs, sorted(set(seqs)), "seqs strictly increasing, none twice")
        per_job = {}
        for sid, typ, data in events:
            self.assertEqual(data["seq"], sid)
            self.assertEqual(data["type"], typ)
            per_job.setdefault(data["job"]["id"], []).append(typ)
        for i in ids:
            self.assertEqual(per_job.get(i), list(TYPES), "job %d" % i)

    def test_stream_opened_before_sees_each_change_once_in_order(self):
        s = Stream(self.server.port, "?queue=%s" % self.q, last_id=last_seq(self.c))
        self.addCleanup(s.close)
        s.read_until(lambda s: s.status is not None, what="headers")
        self.assertEqual(s.status, 200)
        self.assertIn("text/event-stream", s.headers)
        ids = self.lifecycle(20)
        s.read_until(lambda s: len(s.events) >= 60)
        self.check_once_in_order(s.events, ids)
        d = [e[2] for e in s.events if e[1] == "job.claimed"][0]
        self.assertEqual(d["job"]["status"], "running")
        self.assertEqual(d["job"]["attempts"], 1)
        self.assertEqual(d["job"]["fencing_token"], 1)
        self.assertIsNone(d["traceparent"])
        self.assertIsInstance(d["at"], int)

    def test_json_page_resumes_with_nothing_missed_or_repeated(self):
        start = last_seq(self.c)
        ids = self.lifecycle(5)
        seen, after = [], start
        for _ in range(100):
            p = page(self.c, "after=%d&limit=2&queue=%s" % (after, self.q))
            self.assertLessEqual(len(p["events"]), 2)
            seen += [(e["seq"], e["type"], e) for e in p["events"]]
            if not p["events"]:
                break
            after = p["next"]
        self.check_once_in_order(seen, ids)
        p = page(self.c, "after=%d&job=%d&types=job.claimed" % (start, ids[2]))
        self.assertEqual([e["type"] for e in p["events"]], ["job.claimed"])
        self.assertEqual(p["events"][0]["job"]["id"], ids[2])

    def test_bad_input_is_a_clear_400(self):
        for query, headers, mention in (
                ("", {"Last-Event-ID": "abc"}, "Last-Event-ID"),
                ("?after=-1", {}, "after"),
                ("?types=job.nothing", {}, "job.nothing"),
                ("?types=", {}, "types"),
                ("?queue=", {}, "queue"),
                ("?queue=a%20b", {}, "queue"),
                ("?job=0", {}, "job"),
                ("?job=x", {}, "job")):
            for accept in ("text/event-stream", "application/json"):
                h = dict(headers, Accept=accept)
                r = self.c.get("/events" + query, headers=h)
                self.assert_error(r, 400, "invalid_request", mention)
        r = self.c.get("/events?limit=1001", headers={"Accept": "application/json"})
        self.assert_error(r, 400, "invalid_request", "limit")

    def test_a_filter_naming_nothing_yet_is_empty_not_an_error(self):
        # An unknown type is a 400 (above): the set of types is fixed. A queue or a job that
        # holds nothing yet is a valid filter (it may later): an empty page, and a stream that
        # waits for it.
        start = last_seq(self.c)
        for query in ("queue=%s.none" % self.q, "job=999999999"):
            p = page(self.c, "after=%d&%s" % (start, query))
            self.assertEqual(p["events"], [], query)
        s = Stream(self.server.port, "?queue=%s.later" % self.q, last_id=start)
        self.addCleanup(s.close)
        s.read_until(lambda s: s.status is not None, what="headers")
        self.assertEqual(s.status, 200)
        j = self.enqueue(queue=self.q + ".later")
        s.read_until(lambda s: len(s.events) >= 1)
        self.assertEqual((s.events[0][1], s.events[0][2]["job"]["id"]), ("job.created", j["id"]))

    def test_a_rolled_back_change_has_no_event(self):
        # The batch's first element is inserted, then its second names a job that does not
        # exist: the whole batch rolls back (400), and no event of it is ever seen.
        start = last_seq(self.c)
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 1},
            {"queue": self.q, "payload": 2, "depends_on": [999999999]}]})
        self.assert_error(r, 400, "invalid_request", "999999999")
        after = self.enqueue()["id"]  # a later change: the reader passes the rollback's place
        p = page(self.c, "after=%d&queue=%s" % (start, self.q))
        self.assertEqual([(e["type"], e["job"]["id"]) for e in p["events"]],
                         [("job.created", after)])
        self.assertEqual([j["id"] for j in self.list_all("queue=" + self.q)], [after])


class CatchUpTest(ServerTest):
    """A stream 1,000 jobs behind catches up while writers keep their speed."""

    BEHIND = 1000
    WRITES = 100

    def timed_writes(self, q):
        c = self.server.client()
        try:
            t0 = time.monotonic()
            for _ in range(self.WRITES):
                r = c.post("/jobs", {"queue": q, "payload": {}})
                self.assertEqual(r.status, 201, r)
            return time.monotonic() - t0
        finally:
            c.close()

    def test_a_stream_1000_behind_catches_up_while_writers_keep_their_speed(self):
        start = last_seq(self.c)
        r = self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": i}
                                                 for i in range(self.BEHIND)]})
        self.assertEqual(r.status, 201, r)
        alone = self.timed_writes(self.q)
        s = Stream(self.server.port, "?queue=%s" % self.q, last_id=start)
        self.addCleanup(s.close)
        s.read_until(lambda s: s.status is not None, what="headers")
        reading = {}

        def read_all():
            try:
                s.read_until(lambda s: len(s.events) >= self.BEHIND + 2 * self.WRITES,
                             timeout=60)
            except AssertionError as e:
                reading["error"] = str(e)

        reader = threading.Thread(target=read_all)
        reader.start()
        beside = self.timed_writes(self.q)
        reader.join(90)
        self.assertNotIn("error", reading)
        # Generous for a loaded 2-core machine: the reader may cost the writers, never stop
        # them (measured here: about 1.0x to 1.5x).
        self.assertLess(beside, 3 * alone + 2.0, "writes took %.2fs beside the reader, %.2fs "
                        "alone" % (beside, alone))
        seqs = [e[0] for e in s.events]
        self.assertEqual(seqs, sorted(set(seqs)))
        self.assertEqual(len(s.events), self.BEHIND + 2 * self.WRITES)
        self.assertEqual({e[1] for e in s.events}, {"job.created"})


class GapTest(ServerTest):
    server_args = ["--sweep-interval", "1", "--events-max", "3"]

    def test_cursor_older_than_the_log_gets_a_gap_first(self):
        for _ in range(6):
            self.enqueue()
        # A sweep may pass between two enqueues and bound a shorter log: wait for the one after
        # the last enqueue, which leaves 3.
        def bounded():
            p = page(self.c, "after=0")
            return "gap" in p and len(p["events"]) <= 3
        wait_until(bounded, 30, what="the sweep to bound the log")
        p = page(self.c, "after=0")
        self.assertEqual(p["gap"]["after"], 0)
        self.assertEqual(p["gap"]["oldest"], p["events"][0]["seq"])
        self.assertLessEqual(len(p["events"]), 3)
        s = Stream(self.server.port, "", last_id=0)
        self.addCleanup(s.close)
        s.read_until(lambda s: len(s.events) >= 2)
        self.assertEqual(s.events[0][1], "gap")
        self.assertIsNone(s.events[0][0])
        self.assertEqual(s.events[0][2]["after"], 0)
        self.assertEqual(s.events[1][0], s.events[0][2]["oldest"])


class BoundTest(ServerTest):
    server_args = ["--events-streams", "2"]

    def test_streams_are_bounded_and_a_draining_server_ends_them(self):
        streams = [Stream(self.server.port) for _ in range(2)]
        for s in streams:
            self.addCleanup(s.close)
            s.read_until(lambda s: s.status is not None, what="headers")
            self.assertEqual(s.status, 200)
        r = self.c.get("/events")
        self.assert_error(r, 503, "unavailable", "--events-streams")
        m = self.c.get("/metrics").body.decode()
        self.assertIn("\njobq_event_streams 2\n", m)
        self.assertIn("\njobq_event_streams_max 2\n", m)
        sent = int(m.split("\njobq_event_stream_events_total ")[1].split("\n")[0])
        # A slow reader (one that reads nothing) holds up no writer.
        t0 = time.monotonic()
        for _ in range(50):
            self.enqueue()
        self.assertLess(time.monotonic() - t0, 20)
        for s in streams:
            s.read_until(lambda s: len(s.events) >= 50)

        def counted():
            m = self.c.get("/metrics").body.decode()
            return int(m.split("\njobq_event_stream_events_total ")[1].split("\n")[0]) >= \
                sent + 100
        wait_until(counted, 10, what="the streams' events counted in /metrics")
        self.server.terminate()  # SIGTERM: the streams end, the server exits 0
        for s in streams:
            s.read_until(lambda s: s.closed, what="the end of the stream")


class CrashTest(ServerTest):
    server_per_test = True
    server_args = ["--sweep-interval", "1"]

    def test_resume_after_kill9_misses_nothing_and_repeats_nothing(self):
        start = last_seq(self.c)
        ids = self.lifecycle_n(10)
        s = Stream(self.server.port, "", last_id=start)
        s.read_until(lambda s: len(s.events) >= 15)
        got = list(s.events[:15])
        s.close()
        self.server.kill9()
        self.server.restart()
        self.c.close()
        more = self.lifecycle_n(5)
        s = Stream(self.server.port, "", last_id=got[-1][0])
        self.addCleanup(s.close)
        s.read_until(lambda s: len(got) + len(s.events) >= 45)
        all_events = got + s.events
        EventsTest.check_once_in_order(self, all_events, ids + more)

    def lifecycle_n(self, n):
        return EventsTest.lifecycle(self, n)


@unittest.skipUnless(backend() == "pg", "several processes share a database on PostgreSQL only")
class ProcessesCrashTest(ServerTest):
    server_per_test = True
    server_args = ["--sweep-interval", "1"]

    def test_kill9_of_the_reading_and_of_the_writing_process(self):
        # A serves the stream and B makes the changes; A is killed, the stream resumes on B;
        # then B is killed right after its last acknowledged change, and the stream resumes
        # on A restarted. Nothing missed, nothing repeated.
        a = self.server
        b = Server(self.server_args, db=a.db)
        self.addCleanup(b.cleanup)
        b.start()
        start = last_seq(self.c)
        q = "?queue=%s" % self.q
        bc = b.client()
        ids = [self.lifecycle_on(bc) for _ in range(5)]
        s = Stream(a.port, q, last_id=start)
        s.read_until(lambda s: len(s.events) >= 10)
        got = list(s.events[:10])
        s.close()
        a.kill9()
        s = Stream(b.port, q, last_id=got[-1][0])
        s.read_until(lambda s: len(got) + len(s.events) >= 15)
        ids += [self.lifecycle_on(bc) for _ in range(5)]
        s.read_until(lambda s: len(got) + len(s.events) >= 20)
        got += s.events[:len(s.events) - 2]  # the last two are read again after the crash
        s.close()
        bc.close()
        b.kill9()
        a.restart()
        s = Stream(a.port, q, last_id=got[-1][0])
        self.addCleanup(s.close)
        s.read_until(lambda s: len(got) + len(s.events) >= 30)
        EventsTest.check_once_in_order(self, got + s.events, ids)

    def lifecycle_on(self, c):
        r = c.post("/jobs", {"queue": self.q, "payload": {}})
        assert r.status == 201, r
        r = c.post("/claim", {"queue": self.q, "worker_id": "w"})
        j = r.json["jobs"][0]
        r = c.post("/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
        assert r.status == 200, r
        return j["id"]


@unittest.skipUnless(backend() == "pg", "several processes share a database on PostgreSQL only")
class ProcessesTest(ServerTest):
    server_args = ["--sweep-interval", "1"]

    def test_two_processes_one_order_each_change_once(self):
        other = Server(self.server_args, db=self.server.db)
        self.addCleanup(other.cleanup)
        other.start()
        self.addCleanup(other.stop_checked, self)
        start = last_seq(self.c)
        readers = [Stream(srv.port, "?queue=%s" % self.q, last_id=start)
                   for srv in (self.server, other)]
        for s in readers:
            self.addCleanup(s.close)
        ids, errors = [], []

        def produce(srv):
            c = srv.client()
            try:
                for _ in range(40):
                    r = c.post("/jobs", {"queue": self.q, "payload": {}})
                    assert r.status == 201, r
                    ids.append(r.json["id"])
                    r = c.post("/claim", {"queue": self.q, "worker_id": "w"})
                    for j in r.json["jobs"]:
                        r2 = c.post("/jobs/%d/complete" % j["id"],
                                    {"lease_token": j["lease_token"]})
                        assert r2.status == 200, r2
            except Exception as e:  # reported below
                errors.append(repr(e))
            finally:
                c.close()

        threads = [threading.Thread(target=produce, args=(srv,))
                   for srv in (self.server, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        # Whatever is left queued is claimed and completed here.
        for _ in range(100):
            jobs = self.claim(queue=self.q)
            if not jobs:
                break
            for j in jobs:
                self.act(j["id"], "complete", {"lease_token": j["lease_token"]})
        for s in readers:
            s.read_until(lambda s: len(s.events) >= 3 * len(ids), timeout=60)
        self.assertEqual([e[0] for e in readers[0].events], [e[0] for e in readers[1].events])
        EventsTest.check_once_in_order(self, readers[0].events, ids)


if __name__ == "__main__":
    unittest.main()
