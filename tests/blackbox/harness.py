"""Black-box test harness: starts the real jobqd on a free loopback port with a fresh
database, talks HTTP to it, and stops it with SIGTERM, checking that it exits 0.

Python standard library only. The daemon's path comes from $JOBQD (ctest sets it), the
command-line client's from $JOBQ_CLI (`jobq_cli_path()`).

A test class picks the server flags it needs in `server_args`; one server runs per class
(started in setUpClass, stopped in tearDownClass with an exit-code check), and each test
works in queues named after itself (`self.q`, `self.queue("suffix")`) so tests do not see
each other's jobs. A class that sets `server_per_test = True` gets a fresh server for every
test instead, stopped and checked in tearDown.

Every wait is bounded: `wait_until()` polls with a deadline; nothing sleeps a fixed time to
wait for the sweeper.

$JOBQD_WRAPPER, when set, is a command line (split like a shell would) put in front of the
daemon, e.g. JOBQD_WRAPPER="valgrind --leak-check=full --error-exitcode=99": the SIGTERM
exit-code check then fails on any error the wrapper reports. The start and stop time-outs
grow (x6) under a wrapper, which is slow.

Crash tests use `Server.kill9()` (SIGKILL, no clean shutdown) and `Server.restart()` (start
again on the same database, on the same port when it is free).

Two backends. By default every Server gets a SQLite file in its temporary directory. With
JOBQ_TEST_BACKEND=pg, a Server not given `db=` gets a fresh PostgreSQL database instead,
jobq_t_<pid>_<n>, created in the test cluster that scripts/pg_cluster.sh started and named by
JOBQ_TEST_PG_HOST (its socket directory), JOBQ_TEST_PG_PORT, JOBQ_TEST_PG_USER,
JOBQ_TEST_PG_BIN (its bin directory: psql, pg_ctl) and JOBQ_TEST_PG_DATA (its data directory,
for the pg_ctl helpers). jobqd then gets
`--db postgresql:///jobq_t_<pid>_<n>?host=<socket dir, URL-encoded>&port=<port>&user=<user>`.
A restart keeps the database; cleanup() drops it. `backend()` says which backend runs,
`@sqlite_only(reason)` skips a test (or class) under pg, `sqlite_args(...)` passes flags that
only SQLite has, `psql()` runs SQL in a test database, and `pg_stop()`, `pg_start()` and
`pg_restart()` stop and start the whole test cluster. run_backend.py is what ctest runs for
the pg variants: it exits 77 (skipped) when the cluster's variables are missing.
"""

import glob
import http.client
import itertools
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HOST = "127.0.0.1"
PG_VARS = ("JOBQ_TEST_PG_HOST", "JOBQ_TEST_PG_PORT", "JOBQ_TEST_PG_USER")  # needed with pg
PG_TIMEOUT = 60.0  # seconds for one psql or pg_ctl command (each also has its own -t)
WRAPPER = shlex.split(os.environ.get("JOBQD_WRAPPER", ""))  # e.g. valgrind: see above
SLOW = 6.0 if WRAPPER else 1.0
START_TIMEOUT = 20.0 * SLOW  # seconds for /healthz to answer after spawn (sanitizers are slow)
STOP_TIMEOUT = 15.0 * SLOW   # seconds for SIGTERM to end the process
REQUEST_TIMEOUT = 30.0  # default socket timeout of a request

TOKEN_RE = re.compile(r"^[A-Za-z0-9._~-]{16,}$")
URL_SAFE_RE = re.compile(r"^[A-Za-z0-9._~-]+$")

JOB_FIELDS = (
    "id", "queue", "status", "payload", "priority", "run_at", "attempts", "max_attempts",
    "fencing_token", "max_runtime_seconds", "requires", "idempotency_key", "created_at",
    "claimed_at", "heartbeat_at", "lease_expires_at", "worker_id", "finished_at", "result",
    "progress", "error_code", "error_detail", "concurrency_key", "expires_at", "dedup",
    "depends_on", "on_dependency_failure", "traceparent", "tracestate",
)
INT_FIELDS = ("id", "priority", "run_at", "attempts", "max_attempts", "fencing_token",
              "created_at")
NULLABLE_INT_FIELDS = ("max_runtime_seconds", "claimed_at", "heartbeat_at", "lease_expires_at",
                       "finished_at", "expires_at")
NULLABLE_STR_FIELDS = ("idempotency_key", "worker_id", "error_code", "concurrency_key",
                       "traceparent", "tracestate")
STATUSES = ("queued", "blocked", "running", "succeeded", "failed", "cancelled")


def _program(var, name, what):
    """The program $var names, else build/<name>; raises when it is not executable."""
    path = os.environ.get(var)
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", name)
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s not found: set %s to the %s's path (tried %s)"
                           % (name, var, what, path))
    return path


def jobqd_path():
    return _program("JOBQD", "jobqd", "daemon")


def jobq_cli_path():
    """The command-line client `jobq`: $JOBQ_CLI (ctest sets it), else build/jobq."""
    return _program("JOBQ_CLI", "jobq", "client")


def free_port():
    """A loopback port that was free a moment ago (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def faketime_lib():
    """libfaketime's preload library ($JOBQ_FAKETIME_LIB, else Debian's), or None."""
    lib = os.environ.get("JOBQ_FAKETIME_LIB")
    if lib:
        return lib if os.path.exists(lib) else None
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else None


def faketime_env(offset):
    """The environment (for Server(env=...)) of a jobqd whose wall clock is `offset` seconds
    (an int, negative: behind) from the true one, through libfaketime. The monotonic clock
    stays true: jobqd's time-outs and condition waits use it. Raises AssertionError when
    libfaketime is missing (scripts/deps.sh installs it). Not under JOBQD_WRAPPER: LD_PRELOAD
    would reach the wrapper as well."""
    lib = faketime_lib()
    if lib is None:
        raise AssertionError("libfaketime not found: scripts/deps.sh installs faketime "
                             "(or set JOBQ_FAKETIME_LIB to its libfaketime.so.1)")
    # ASan wants to come first among the libraries; libfaketime is preloaded before it.
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": lib, "FAKETIME": "%+d" % offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


def now():
    return int(time.time())


def wait_until(pred, timeout, interval=0.05, what="condition"):
    """Call pred() until it returns a truthy value or `timeout` seconds pass. Returns the
    value; raises AssertionError naming `what` on time-out. Bounded by the deadline."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s (last: %r)"
                                 % (timeout, what, last))
        time.sleep(interval)


class Response:
    """An HTTP answer: status, headers (case-insensitive), body bytes and the parsed JSON
    (None when the body is not JSON). Unpacks as (status, headers, json)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.json = None
        if body:
            try:
                self.json = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                self.json = None

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __iter__(self):
        return iter((self.status, self.headers, self.json))

    def __repr__(self):
        text = self.body[:400].decode("utf-8", "replace")
        return "<%d %s>" % (self.status, text)


class Client:
    """One keep-alive HTTP/1.1 connection to the server. Not thread-safe: give each thread
    its own Client."""

    def __init__(self, port, timeout=REQUEST_TIMEOUT):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _connect(self, timeout):
        """A new connection to the server (a subclass may speak TLS)."""
        return http.client.HTTPConnection(HOST, self.port, timeout=timeout)

    def request(self, method, path, body=None, raw=None, headers=None, timeout=None):
        """Send one request. `body` is encoded as JSON with Content-Type application/json;
        `raw` (bytes) is sent as is, with only the headers given. Returns a Response."""
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
        if data is not None and method in ("GET", "HEAD") and not data:
            data = None
        # Retry once only when a reused keep-alive connection turned out to be closed
        # before any answer (the classic idle-close race); a fresh connection never retries.
        for attempt in range(2):
            reused = self.conn is not None
            if self.conn is None:
                self.conn = self._connect(timeout or self.timeout)
            elif timeout is not None:
                self.conn.timeout = timeout
                if self.conn.sock is not None:
                    self.conn.sock.settimeout(timeout)
            try:
                self.conn.request(method, path, body=data, headers=hdrs)
                resp = self.conn.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as e:
                self.close()
                if reused and attempt == 0:
                    continue
                raise AssertionError("%s %s: connection failed: %r" % (method, path, e))
            except Exception:
                self.close()
                raise
            headers_out = {k.lower(): v for k, v in resp.getheaders()}
            if resp.will_close:
                self.close()
            elif timeout is not None and self.conn is not None:
                self.conn.timeout = self.timeout
                if self.conn.sock is not None:
                    self.conn.sock.settimeout(self.timeout)
            return Response(resp.status, headers_out, payload)
        raise AssertionError("unreachable")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)


def raw_exchange(port, data, timeout=REQUEST_TIMEOUT, shut_write=False):
    """Send raw bytes on a new connection and read one HTTP response. Tolerates the server
    answering (and closing) before it has read everything we send. Returns a Response."""
    sock = socket.create_connection((HOST, port), timeout=timeout)
    try:
        try:
            sock.sendall(data)
            if shut_write:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_response(sock, timeout)
    finally:
        sock.close()


def read_response(sock, timeout=REQUEST_TIMEOUT):
    """Read one HTTP/1.1 response from sock (Content-Length, chunked or until close)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    buf = b""

    def more():
        if time.monotonic() > deadline:
            raise AssertionError("response timed out")
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        return chunk

    while b"\r\n\r\n" not in buf:
        chunk = more()
        if not chunk:
            raise AssertionError("connection closed before a full response header: %r"
                                 % buf[:200])
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = more()
            if not chunk:
                break
            rest += chunk
        body = rest[:n]
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        for _ in range(100000):
            while b"\r\n" not in rest:
                chunk = more()
                if not chunk:
                    raise AssertionError("truncated chunked response")
                rest += chunk
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                chunk = more()
                if not chunk:
                    raise AssertionError("truncated chunked response")
                rest += chunk
            if size == 0:
                break
            body += rest[:size]
            rest = rest[size + 2:]
    else:
        body = rest
        for _ in range(100000):
            chunk = more()
            if not chunk:
                break
            body += chunk
    return Response(status, headers, body)


# ----- the backend: SQLite files or databases in the PostgreSQL test cluster ---------------

def backend():
    """The backend under test: "pg" when JOBQ_TEST_BACKEND=pg, else "sqlite"."""
    return "pg" if os.environ.get("JOBQ_TEST_BACKEND", "") == "pg" else "sqlite"


def sqlite_only(reason):
    """Decorator: skip the test (or the whole class) under the pg backend, saying why."""
    return unittest.skipIf(backend() == "pg", "SQLite only: " + reason)


def sqlite_args(*args):
    """`args` under SQLite, nothing under pg: for flags only the SQLite backend has."""
    return tuple(args) if backend() == "sqlite" else ()


def pg_missing():
    """None when the test cluster's variables are set, else a sentence naming what is not."""
    missing = [v for v in PG_VARS if not os.environ.get(v)]
    if not missing:
        return None
    return ("the PostgreSQL test cluster is not set: %s missing (start one with "
            "scripts/pg_cluster.sh start DIR, then `. DIR/env`)" % ", ".join(missing))


def _pg_env():
    why = pg_missing()
    if why:
        raise RuntimeError(why)
    return {k: os.environ[k] for k in PG_VARS}


def _pg_tool(name):
    bindir = os.environ.get("JOBQ_TEST_PG_BIN")
    if bindir:
        return os.path.join(bindir, name)
    found = shutil.which(name)
    if not found:
        raise RuntimeError("%s not found: set JOBQ_TEST_PG_BIN" % name)
    return found


def pg_url(dbname):
    """The libpq URL of database `dbname` in the test cluster, on its unix socket."""
    e = _pg_env()
    return "postgresql:///%s?%s" % (
        urllib.parse.quote(dbname, safe=""),
        "&".join("%s=%s" % (k, urllib.parse.quote(e[v], safe=""))
                 for k, v in (("host", "JOBQ_TEST_PG_HOST"), ("port", "JOBQ_TEST_PG_PORT"),
                              ("user", "JOBQ_TEST_PG_USER"))))


def psql(dbname, sql, timeout=PG_TIMEOUT, check=True):
    """Run `sql` in database `dbname` of the test cluster (psql -Atc, stopping at the first
    error). Returns the output without the final newline: one line per row, columns split by
    "|". Raises AssertionError, with psql's message, when it fails and `check` is true."""
    e = _pg_env()
    cmd = [_pg_tool("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
           "-h", e["JOBQ_TEST_PG_HOST"], "-p", e["JOBQ_TEST_PG_PORT"],
           "-U", e["JOBQ_TEST_PG_USER"], "-d", dbname, "-c", sql]
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("psql -d %s timed out after %.0fs: %s" % (dbname, timeout, sql))
    if check and p.returncode != 0:
        raise AssertionError("psql -d %s failed (%d): %s\n%s"
                             % (dbname, p.returncode, sql, p.stderr.strip()))
    return p.stdout.rstrip("\n")


def _pg_ctl(*args):
    """Run pg_ctl on the test cluster's data directory, as its owner (postgres refuses root)."""
    data = os.environ.get("JOBQ_TEST_PG_DATA")
    if not data:
        raise RuntimeError("JOBQ_TEST_PG_DATA is not set: the pg_ctl helpers need the test "
                           "cluster's data directory")
    prefix = []
    if os.geteuid() == 0:
        owner = pwd.getpwuid(os.stat(data).st_uid).pw_name
        if owner != "root":
            prefix = ["runuser", "-u", owner, "--"]
    cmd = prefix + [_pg_tool("pg_ctl"), "-D", data, "-w", "-t", "%d" % PG_TIMEOUT] + list(args)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=PG_TIMEOUT + 10)
    except subprocess.TimeoutExpired:
        raise AssertionError("pg_ctl %s timed out" % " ".join(args))
    if p.returncode != 0:
        raise AssertionError("pg_ctl %s failed (%d): %s"
                             % (" ".join(args), p.returncode, (p.stdout + p.stderr).strip()))


def pg_stop():
    """Stop the whole test cluster (fast mode: open sessions are ended). Waits until it is
    down. Other tests that use the cluster at the same time fail: such tests run alone."""
    _pg_ctl("-m", "fast", "stop")


def pg_start():
    """Start the test cluster again (the settings pg_cluster.sh wrote into postgresql.conf,
    the log it keeps next to the data directory) and wait until it accepts connections."""
    data = os.environ.get("JOBQ_TEST_PG_DATA", "")
    _pg_ctl("-l", os.path.join(os.path.dirname(data), "postgres.log"), "start")
    wait_until(lambda: psql("postgres", "SELECT 1", timeout=15, check=False) == "1",
               PG_TIMEOUT, 0.2, "the PostgreSQL test cluster to accept connections")


def pg_restart():
    """pg_stop() then pg_start()."""
    pg_stop()
    pg_start()


_db_counter = itertools.count(1)


class TestDatabase:
    """A fresh database for one test: a SQLite file in `directory`, or under pg a new
    database in the test cluster. `url` is what `--db` takes, `name` the PostgreSQL
    database's name (None under SQLite). drop() removes a PostgreSQL database (best effort,
    bounded; the SQLite file goes with its directory)."""

    def __init__(self, directory):
        self.name = None
        if backend() == "sqlite":
            self.url = os.path.join(directory, "jobq.db")
            return
        self.name = "jobq_t_%d_%d" % (os.getpid(), next(_db_counter))
        psql("postgres", 'CREATE DATABASE "%s"' % self.name)
        self.url = pg_url(self.name)

    def sql(self, sql, **kw):
        """psql() in this database (pg only)."""
        if self.name is None:
            raise AssertionError("sql() needs the pg backend")
        return psql(self.name, sql, **kw)

    def drop(self):
        if self.name is None:
            return
        name, self.name = self.name, None
        try:  # FORCE ends sessions a killed jobqd may have left behind
            out = psql("postgres", 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name,
                       timeout=30, check=False)
        except AssertionError as e:
            out = str(e)
        if psql("postgres", "SELECT 1 FROM pg_database WHERE datname = '%s'" % name,
                timeout=10, check=False) == "1":
            sys.stderr.write("warning: could not drop test database %s: %s\n" % (name, out))


class Server:
    """A jobqd process on a free loopback port with its own temporary directory and, unless
    given `db=`, a fresh database (TestDatabase: SQLite file or PostgreSQL database)."""

    def __init__(self, args=(), db=None, env=None, via_env=False, exe=None):
        self.args = list(args)
        self.exe = exe  # the daemon to run (another build's, say); None: jobqd_path()
        self.via_env = via_env  # pass listen and db as JOBQ_LISTEN / JOBQ_DB, not flags
        self.tmpdir = tempfile.mkdtemp(prefix="jobq-bb-")
        self.database = None  # the TestDatabase made here, dropped by cleanup()
        if db is None:
            try:
                self.database = TestDatabase(self.tmpdir)
            except BaseException:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
                raise
        self.db = db or self.database.url
        self.db_name = self.database.name if self.database else None  # pg: for psql()
        self.env = env
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.tmpdir, "jobqd.log")
        self.log_file = None

    def start(self, port=None):
        """Spawn jobqd and wait for /healthz. `port`, when given, is tried first (a restart
        keeps its address); if it is taken, a free port is used instead."""
        exe = self.exe or jobqd_path()
        last_error = None
        for attempt in range(5):  # a free port may be taken between probe and bind: retry
            self.port = port if (port and attempt == 0) else free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
            if self.env:
                env.update(self.env)
            self.log_file = open(self.log_path, "ab")
            listen = "%s:%d" % (HOST, self.port)
            if self.via_env:
                env.update({"JOBQ_LISTEN": listen, "JOBQ_DB": self.db})
                cmd = WRAPPER + [exe] + self.args
            else:
                cmd = WRAPPER + [exe, "--listen", listen, "--db", self.db] + self.args
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                         stderr=subprocess.STDOUT, env=env)
            try:
                self._wait_healthy()
                return self
            except AssertionError as e:
                last_error = e
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait(timeout=STOP_TIMEOUT)
                self.log_file.close()
                if "in use" not in self.log_tail().lower():
                    break
        raise AssertionError("jobqd did not start: %s\n--- jobqd log ---\n%s"
                             % (last_error, self.log_tail()))

    def _wait_healthy(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("jobqd exited with %d at start" % self.proc.returncode)
            try:
                c = Client(self.port, timeout=2)
                r = c.get("/healthz")
                c.close()
                if r.status == 200:
                    return
            except (OSError, AssertionError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise AssertionError("no /healthz answer within %.0fs" % START_TIMEOUT)

    def kill9(self):
        """SIGKILL the process (a crash: no clean shutdown) and reap it. Returns the exit code
        (-9). The database and the log stay for a restart()."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=STOP_TIMEOUT)
        self.proc = None
        if self.log_file:
            self.log_file.close()
            self.log_file = None
        return code

    def restart(self):
        """Start again on the same database (after kill9() or a stop), on the same port
        when it can be bound again."""
        if self.proc is not None:
            raise AssertionError("restart() while jobqd is still running")
        return self.start(port=self.port)

    def client(self, timeout=REQUEST_TIMEOUT):
        return Client(self.port, timeout=timeout)

    def log_tail(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return "(no log)"

    def terminate(self, timeout=STOP_TIMEOUT):
        """SIGTERM and wait. Returns the exit code (kills and returns None on time-out)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
            code = None
        if self.log_file:
            self.log_file.close()
            self.log_file = None
        return code

    def stop_checked(self, testcase=None):
        """Stop with SIGTERM; raise (with the log tail) unless the exit code is 0, or unless
        the database's kept-up counts per queue and status (GET /queues reads them) equal a
        count of its jobs."""
        code = self.terminate()
        self.proc = None
        if code != 0:
            msg = ("jobqd exit code after SIGTERM: %r (expected 0)\n--- jobqd log ---\n%s"
                   % (code, self.log_tail()))
            raise AssertionError(msg)
        wrong = self.counts_off()
        if wrong:
            raise AssertionError("kept counts differ from the jobs (queue, status, kept, "
                                 "counted): %r" % (wrong,))

    def counts_off(self):
        """The (queue, status, kept, counted) whose kept count differs from the jobs in the
        database this server used (rows of the harness's own database or SQLite file only)."""
        if self.database is not None and self.database.name is not None:
            if self.database.sql("SELECT to_regclass('jobq_counts') IS NOT NULL") != "t":
                return []
            out = self.database.sql(
                "SELECT queue, status, sum(kept), sum(counted) FROM ("
                "SELECT queue, status, n AS kept, 0 AS counted FROM jobq_counts UNION ALL "
                "SELECT queue, status, 0, count(*) FROM jobq_jobs GROUP BY queue, status) m "
                "GROUP BY queue, status HAVING sum(kept) <> sum(counted)")
            return [tuple(line.split("|")) for line in out.splitlines() if line]
        if self.database is None or not os.path.exists(self.db):
            return []
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'counts'").fetchone():
                return []
            return con.execute(
                "SELECT queue, status, sum(kept), sum(counted) FROM ("
                "SELECT queue, status, n AS kept, 0 AS counted FROM counts UNION ALL "
                "SELECT queue, status, 0, count(*) FROM jobs GROUP BY queue, status) "
                "GROUP BY queue, status HAVING sum(kept) <> sum(counted)").fetchall()
        finally:
            con.close()

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
        if self.log_file:
            self.log_file.close()
        if self.database is not None:
            self.database.drop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def sql(self, sql, **kw):
        """psql() in this server's own database (pg only)."""
        if self.database is None:
            raise AssertionError("sql() needs a database the harness made")
        return self.database.sql(sql, **kw)


_queue_counter = itertools.count(1)


class ServerTest(unittest.TestCase):
    """Base class: one jobqd per class (or per test with server_per_test = True)."""

    server_args = ()
    server_per_test = False
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.server = None
        if not cls.server_per_test:
            cls.server = Server(cls.server_args)
            try:
                cls.server.start()
            except Exception:
                cls.server.cleanup()
                raise

    @classmethod
    def tearDownClass(cls):
        srv = cls.server
        if srv is not None and not cls.server_per_test:
            try:
                srv.stop_checked()
            finally:
                srv.cleanup()

    def setUp(self):
        if self.server_per_test:
            type(self).server = Server(self.server_args)
            self.addCleanup(type(self).server.cleanup)
            self.server.start()
        self.c = self.server.client()
        self.addCleanup(self.c.close)
        name = re.sub(r"[^A-Za-z0-9]", "", self._testMethodName.replace("test_", ""))
        self.q = "%s-%d" % (name[:60] or "q", next(_queue_counter))

    def tearDown(self):
        if self.server_per_test and self.server is not None and self.server.proc is not None:
            self.server.stop_checked()

    # ----- helpers -------------------------------------------------------------------

    def queue(self, suffix):
        return "%s.%s" % (self.q, suffix)

    def req(self, method, path, body=None, **kw):
        return self.c.request(method, path, body=body, **kw)

    def enqueue(self, payload=None, status=201, **fields):
        body = {"payload": payload if payload is not None else {"n": 1}}
        body.setdefault("queue", self.q)
        body.update(fields)
        r = self.c.post("/jobs", body)
        self.assertEqual(r.status, status, "POST /jobs %r -> %r" % (body, r))
        self.assert_job(r.json)
        return r.json

    def claim(self, worker="w1", queue=None, expect=None, **fields):
        body = {"worker_id": worker}
        if "queues" not in fields:
            body["queue"] = queue or self.q
        body.update(fields)
        r = self.c.post("/claim", body, timeout=REQUEST_TIMEOUT + fields.get("wait_seconds", 0))
        self.assertEqual(r.status, 200, "POST /claim %r -> %r" % (body, r))
        self.assertIsInstance(r.json, dict)
        self.assertIsInstance(r.json.get("jobs"), list, r)
        for j in r.json["jobs"]:
            self.assert_job(j, claimed=True)
        if expect is not None:
            self.assertEqual(len(r.json["jobs"]), expect, r)
        return r.json["jobs"]

    def claim_one(self, worker="w1", queue=None, **fields):
        jobs = self.claim(worker, queue, expect=1, **fields)
        return jobs[0]

    def get_job(self, job_id):
        r = self.c.get("/jobs/%d" % job_id)
        self.assertEqual(r.status, 200, r)
        self.assert_job(r.json)
        return r.json

    def act(self, job_id, action, body=None, status=200):
        r = self.c.post("/jobs/%d/%s" % (job_id, action), body)
        self.assertEqual(r.status, status, "POST /jobs/%d/%s %r -> %r"
                         % (job_id, action, body, r))
        if status == 200:
            self.assert_job(r.json)
        return r

    def list_all(self, query, limit=1000, max_pages=1000):
        """Follow next_cursor from GET /jobs?<query>; returns every job seen, in order."""
        out = []
        cursor = None
        for _ in range(max_pages):
            path = "/jobs?%s&limit=%d" % (query, limit)
            if cursor is not None:
                path += "&cursor=" + cursor
            r = self.c.get(path)
            self.assertEqual(r.status, 200, r)
            self.assertIsInstance(r.json.get("jobs"), list)
            self.assertIn("next_cursor", r.json)
            out.extend(r.json["jobs"])
            cursor = r.json["next_cursor"]
            if cursor is None:
                return out
            self.assertIsInstance(cursor, str)
            self.assertRegex(cursor, URL_SAFE_RE)
        self.fail("paging did not end within %d pages" % max_pages)

    # ----- assertions ----------------------------------------------------------------

    def assert_json_ct(self, r):
        ct = r.header("content-type", "")
        self.assertTrue(ct.split(";")[0].strip().lower() == "application/json",
                        "Content-Type %r for %r" % (ct, r))

    def assert_error(self, r, status, code, mentions=None):
        """r is an error answer with this status and code, a JSON body of the contract's
        shape, Content-Type application/json; `mentions` must appear in the message."""
        self.assertEqual(r.status, status, r)
        self.assert_json_ct(r)
        self.assertIsInstance(r.json, dict, r)
        err = r.json.get("error")
        self.assertIsInstance(err, dict, r)
        self.assertEqual(err.get("code"), code, r)
        self.assertIsInstance(err.get("message"), str, r)
        self.assertTrue(err["message"], r)
        if mentions is not None:
            self.assertIn(mentions, err["message"], r)

    def assert_job(self, j, claimed=False):
        self.assertIsInstance(j, dict, j)
        for f in JOB_FIELDS:
            self.assertIn(f, j, "job lacks %r: %r" % (f, j))
        for f in INT_FIELDS:
            self.assertTrue(type(j[f]) is int, "%s not an integer: %r" % (f, j))
        for f in NULLABLE_INT_FIELDS:
            self.assertTrue(j[f] is None or type(j[f]) is int,
                            "%s not an integer or null: %r" % (f, j))
        for f in NULLABLE_STR_FIELDS:
            self.assertTrue(j[f] is None or isinstance(j[f], str),
                            "%s not a string or null: %r" % (f, j))
        self.assertIsInstance(j["queue"], str)
        self.assertIn(j["status"], STATUSES)
        self.assertIsInstance(j["requires"], list)
        for t in j["requires"]:
            self.assertIsInstance(t, str)
        self.assertIsInstance(j["depends_on"], list)
        for d in j["depends_on"]:
            self.assertTrue(type(d) is int and d > 0, "depends_on: %r" % j)
        self.assertIn(j["on_dependency_failure"], ("cancel", "run"))
        self.assertGreater(j["id"], 0)
        if claimed:
            self.assertIn("lease_token", j)
            self.assertIsInstance(j["lease_token"], str)
            self.assertRegex(j["lease_token"], TOKEN_RE)
            self.assertEqual(j["status"], "running")
        else:
            self.assertNotIn("lease_token", j, "lease_token shown outside a claim: %r" % j)

    def assert_near(self, value, expected, slack=2, msg=None):
        self.assertIsInstance(value, int, msg)
        self.assertLessEqual(abs(value - expected), slack,
                             msg or "%r not within %d of %r" % (value, slack, expected))
