"""The servers the benchmark measures, each started fresh on loopback in a temporary
directory of its own, and stopped (and checked) after each scenario: jobqd, beanstalkd and a
PostgreSQL cluster made with initdb (never the system's cluster). Python standard library only.
"""

import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class ServerError(RuntimeError):
    pass


def free_port():
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_until(check, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise ServerError("%s did not happen within %.0f s" % (what, timeout))


def stop_process(proc, name, timeout=STOP_TIMEOUT):
    """SIGTERM, wait, SIGKILL if needed. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ServerError("%s did not stop within %.0f s of SIGTERM" % (name, timeout))
    return proc.returncode


class Conn:
    """One keep-alive HTTP connection to a jobqd on loopback; call() sends a JSON body (or
    none) and returns the raw answer, raising on a status of 300 or more."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.c.request(method, path, body=data, headers=headers)
        r = self.c.getresponse()
        raw = r.read()
        if r.status >= 300:
            raise RuntimeError("%s %s -> %d %s" % (method, path, r.status, raw[:200]))
        return raw


class LocalServer:
    """A server process of ours (self.proc) listening on HOST:self.port."""

    proc = None
    port = None

    @property
    def pid(self):
        return self.proc.pid

    @property
    def addr(self):
        return "%s:%d" % (HOST, self.port)


class Jobqd(LocalServer):
    """jobqd on a free port, with log in workdir and either a SQLite database there (--sync
    sync; copied from snapshot when given) or the PostgreSQL database at the URL db (with
    --pool-size pool_size when given)."""

    def __init__(self, binary, workdir, sync=None, snapshot=None, token=None, db=None,
                 pool_size=None, sqs=False):
        self.binary, self.workdir, self.sync = binary, workdir, sync
        self.snapshot, self.token = snapshot, token
        self.sqs_port = free_port() if sqs else None  # --sqs-listen's, when sqs
        self.db, self.pool_size = db, pool_size
        self.proc = None
        self.port = None

    @property
    def sqs_addr(self):
        return "%s:%d" % (HOST, self.sqs_port)

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        if self.snapshot:
            for f in glob.glob(os.path.join(self.snapshot, "jobq.db*")):
                shutil.copy(f, self.workdir)
        self.port = free_port()
        self.log = open(os.path.join(self.workdir, "jobqd.log"), "ab")
        cmd = [self.binary, "--listen", self.addr, "--log-level", "warn"]
        if self.db:
            cmd += ["--db", self.db]
        else:
            cmd += ["--db", os.path.join(self.workdir, "jobq.db"), "--sync", self.sync]
        if self.pool_size:
            cmd += ["--pool-size", str(self.pool_size)]
        if self.sqs_port:
            cmd += ["--sqs-listen", self.sqs_addr]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        wait_until(self._healthy, START_TIMEOUT, "jobqd answering /healthz")
        return self

    def _healthy(self):
        if self.proc.poll() is not None:
            raise ServerError("jobqd exited with %s at start-up (log: %s)"
                              % (self.proc.returncode, self.workdir))
        req = urllib.request.Request("http://%s/healthz" % self.addr)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def pg_figures(self):
        """The figures of /metrics that tell how the PostgreSQL store runs its transactions,
        with "wall": when they were read (time.monotonic())."""
        out = {"wall": time.monotonic()}
        req = urllib.request.Request("http://%s/metrics" % self.addr)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read().decode()
        except OSError:
            return out
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name.startswith(("jobq_pg_", "jobq_store_")) and "{" not in name:
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        return out

    def stop(self):
        rc = stop_process(self.proc, "jobqd")
        self.log.close()
        if rc != 0:
            raise ServerError("jobqd exited with %d after SIGTERM (log in %s)" % (rc, self.workdir))

    def problems(self):
        """The lines jobqd logged at warn or error (it runs with --log-level warn), but for the
        start-up warning that authentication is off (the benchmark gives no token file)."""
        try:
            with open(os.path.join(self.workdir, "jobqd.log"), errors="replace") as f:
                return [line.rstrip("\n") for line in f
                        if line.split(" ", 2)[1:2] in (["warn"], ["error"])
                        and "AUTHENTICATION IS OFF" not in line]
        except OSError:
            return []


class Beanstalkd(LocalServer):
    """beanstalkd on a free port; binlog: None (in memory), "f0" (fsync every write) or
    "nosync" (a binlog never fsynced: used only to fill the binlog quickly)."""

    def __init__(self, workdir, binlog=None):
        self.workdir, self.binlog = workdir, binlog
        self.proc = None
        self.port = None

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        cmd = ["beanstalkd", "-l", HOST, "-p", str(self.port)]
        if self.binlog:
            bdir = os.path.join(self.workdir, "binlog")
            os.makedirs(bdir, exist_ok=True)
            cmd += ["-b", bdir] + (["-f0"] if self.binlog == "f0" else ["-F"])
        self.log = open(os.path.join(self.workdir, "beanstalkd.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        wait_until(self._listening, START_TIMEOUT, "beanstalkd listening")
        return self

    def _listening(self):
        if self.proc.poll() is not None:
            raise ServerError("beanstalkd exited with %s at start-up" % self.proc.returncode)
        try:
            with socket.create_connection((HOST, self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self):
        stop_process(self.proc, "beanstalkd")  # beanstalkd exits 143 on SIGTERM
        self.log.close()


def pg_bindir():
    """The newest installed PostgreSQL server's bin directory, or None."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                  key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if dirs:
        return os.path.dirname(dirs[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class Postgres:
    """A PostgreSQL cluster of its own in workdir, listening only on a unix socket in workdir
    (no TCP), started with the synchronous_commit setting given to start()."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.bindir = pg_bindir()
        if not self.bindir:
            raise ServerError("PostgreSQL's initdb not found (apt-get install postgresql)")
        self.data = os.path.join(workdir, "data")
        self.sock = os.path.join(workdir, "sock")
        self.port = None
        self.as_user = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _own(self, path):
        if self.as_user:
            shutil.chown(path, "postgres", "postgres")

    def init(self):
        os.makedirs(self.workdir, exist_ok=True)
        os.chmod(self.workdir, 0o755)
        os.makedirs(self.sock, exist_ok=True)
        self._own(self.workdir)
        self._own(self.sock)
        log = os.path.join(self.workdir, "initdb.log")
        with open(log, "wb") as f:
            rc = subprocess.call(self.as_user + [os.path.join(self.bindir, "initdb"), "-D",
                                 self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8"],
                                 stdout=f, stderr=f, stdin=subprocess.DEVNULL)
        if rc != 0:
            raise ServerError("initdb failed (see %s)" % log)
        return self

    def start(self, synchronous_commit, max_connections=100, same_port=False):
        """Start the cluster (on the port it had before when same_port)."""
        if not (same_port and self.port):
            self.port = free_port()
        opts = ("-p %d -k %s -c listen_addresses='' -c synchronous_commit=%s "
                "-c max_connections=%d -c fsync=on"
                % (self.port, self.sock, synchronous_commit, max_connections))
        log = os.path.join(self.workdir, "postgres.log")
        rc = subprocess.call(self.as_user + [os.path.join(self.bindir, "pg_ctl"), "-D", self.data,
                             "-l", log, "-w", "-t", "60", "-o", opts, "start"],
                             stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        if rc != 0:
            raise ServerError("pg_ctl start failed (see %s)" % log)
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        return self

    def stop(self):
        subprocess.call(self.as_user + [os.path.join(self.bindir, "pg_ctl"), "-D", self.data,
                        "-w", "-t", "60", "-m", "fast", "stop"],
                        stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def conn_args(self):
        return ["-h", self.sock, "-p", str(self.port), "-U", "postgres"]

    def psql(self, sql=None, file=None):
        """Run SQL; returns its output (unaligned, tuples only)."""
        cmd = [os.path.join(self.bindir, "psql")] + self.conn_args() + [
            "-d", "postgres", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        cmd += ["-f", file] if file else ["-c", sql]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise ServerError("psql failed: %s" % out.stderr.strip())
        return out.stdout.strip()

    def pgbench_cmd(self):
        return [os.path.join(self.bindir, "pgbench")] + self.conn_args()

    def create_db(self, dbname):
        self.psql("CREATE DATABASE %s" % dbname)

    def drop_db(self, dbname):
        self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % dbname)

    def url(self, dbname, application_name, host=None):
        """A libpq URL of database dbname on this cluster's socket (for jobqd --db), or on
        the socket directory host (a DelayProxy's)."""
        return "postgresql://postgres@/%s?host=%s&port=%d&application_name=%s" % (
            dbname, urllib.parse.quote(host or self.sock, safe="/"), self.port, application_name)


class DelayProxy:
    """jobq-delay (bench/delay.c) between a client and the PostgreSQL cluster pg: a socket in
    the directory self.dir (a libpq host) whose every byte reaches the other side rtt_us / 2
    microseconds later, each way. send() switches its mode at run time ("delay US", "hold",
    "reset", "pass": bench/delay.c)."""

    def __init__(self, binary, pg, workdir, rtt_us):
        self.binary, self.pg, self.dir, self.rtt_us = binary, pg, workdir, rtt_us
        self.proc = None
        self.control = os.path.join(workdir, "control")

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise ServerError("%s not built (bench/CMakeLists.txt)" % self.binary)
        os.makedirs(self.dir, exist_ok=True)
        name = ".s.PGSQL.%d" % self.pg.port
        path = os.path.join(self.dir, name)
        self.proc = subprocess.Popen([self.binary, path, os.path.join(self.pg.sock, name),
                                      str(self.rtt_us), self.control], stdin=subprocess.DEVNULL)
        wait_until(lambda: os.path.exists(path) and os.path.exists(self.control),
                   START_TIMEOUT, "jobq-delay listening")
        return self

    def send(self, command):
        """Switch the proxy's mode: "delay US", "hold", "reset" or "pass"."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(command.encode(), self.control)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class ConnCounter:
    """Counts the client connections to database dbname of `pg` per application_name, every
    interval seconds on one psql connection of its own (to another database: not counted), from
    start() to stop(), which returns {application_name: the largest count seen}."""

    def __init__(self, pg, dbname, interval=0.2):
        self.pg, self.dbname, self.interval = pg, dbname, interval
        self.most = {}
        self.states = {}  # (application_name, state) -> the sum of the counts sampled
        # (application_name, wait) -> the sum of the active backends sampled in that wait:
        # "type:event", or "CPU" for none
        self.waits = {}
        self.samples = 0
        self.done = threading.Event()

    def start(self):
        self.proc = subprocess.Popen(
            [os.path.join(self.pg.bindir, "psql")] + self.pg.conn_args() +
            ["-d", "postgres", "-X", "-q", "-A", "-t"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def sample(self):
        self.proc.stdin.write("SELECT application_name, coalesce(state, ''),"
                              " CASE WHEN wait_event IS NULL THEN 'CPU'"
                              " ELSE wait_event_type || ':' || wait_event END, count(*)"
                              " FROM pg_stat_activity"
                              " WHERE datname = '%s' AND backend_type = 'client backend'"
                              " GROUP BY 1, 2, 3;\n\\echo --end--\n"
                              % self.dbname)
        self.proc.stdin.flush()
        counts = {}
        for line in self.proc.stdout:
            if line.strip() == "--end--":
                for name, n in counts.items():
                    self.most[name] = max(self.most.get(name, 0), n)
                self.samples += 1
                return
            parts = line.strip().rsplit("|", 3)
            if len(parts) == 4 and parts[3].isdigit():
                name, state, wait, count = parts[0], parts[1], parts[2], int(parts[3])
                counts[name] = counts.get(name, 0) + count
                self.states[(name, state)] = self.states.get((name, state), 0) + count
                if state == "active":
                    self.waits[(name, wait)] = self.waits.get((name, wait), 0) + count
        raise ServerError("psql counting connections ended")

    def _run(self):
        try:
            while not self.done.wait(self.interval):
                self.sample()
        except (OSError, ServerError):
            pass

    def mean_state(self, state, names):
        """The mean number of connections of the applications names in state (active, idle,
        idle in transaction) over the samples taken."""
        if not self.samples:
            return 0.0
        return sum(self.states.get((n, state), 0) for n in names) / self.samples

    def wait_shares(self, names):
        """{wait: its share of the active samples of the applications names}, wait being
        "type:event" or "CPU" (no wait event: running, or ready to)."""
        sums = {}
        for (n, wait), c in self.waits.items():
            if n in names:
                sums[wait] = sums.get(wait, 0) + c
        total = sum(sums.values())
        return {w: c / total for w, c in sums.items()} if total else {}

    def stop(self):
        self.done.set()
        self.thread.join()
        try:
            self.sample()
            self.proc.stdin.close()
        except (OSError, ServerError):
            pass
        self.proc.wait(30)
        return self.most
