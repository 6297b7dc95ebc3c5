"""TLS: --tls-cert/--tls-key serve HTTPS. A throwaway CA and a server certificate for 127.0.0.1
(IP SAN) are made with the openssl CLI in a temporary directory; a client that verifies
against that CA runs a job through its life, a client that does not trust the CA fails
verification, plain HTTP on the TLS port is closed without an answer and without a hang, and
the server keeps serving HTTPS after both; the SQS listener (--sqs-listen) speaks TLS too. Bad
certificate and key files fail start-up."""

import http.client
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

import harness
from harness import HOST, REQUEST_TIMEOUT, START_TIMEOUT, Client, Server, ServerTest, jobqd_path

# The harness's $JOBQD_WRAPPER (e.g. valgrind), when it has one, for the processes started here.
WRAPPER = list(getattr(harness, "WRAPPER", []))

OPENSSL_TIMEOUT = 60


def openssl(*args, cwd):
    exe = shutil.which("openssl")
    if not exe:
        raise AssertionError("the openssl command is needed by this test: run scripts/deps.sh")
    p = subprocess.run([exe] + list(args), cwd=cwd, capture_output=True,
                       timeout=OPENSSL_TIMEOUT, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise AssertionError("openssl %s failed: %s" % (" ".join(args), p.stderr.decode()))


def make_pki(d):
    """A CA (ca.pem) and a server certificate for IP 127.0.0.1 signed by it (server.pem,
    server.key), plus a second, unrelated key (other.key). EC P-256: quick to generate."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=jobq test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1",
            cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n"
                "basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\n"
                "authorityKeyIdentifier=keyid\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=d)
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-out", "other.key", cwd=d)
    for name in ("server.key", "other.key", "ca.key"):
        os.chmod(os.path.join(d, name), 0o600)


def trusting(cafile):
    """A client context that verifies the server against cafile only (and the name)."""
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class TLSClient(Client):
    """The harness Client over HTTPS: one keep-alive connection, verified with `context`. Not
    thread-safe."""

    def __init__(self, port, context, timeout=REQUEST_TIMEOUT):
        super().__init__(port, timeout)
        self.context = context

    def _connect(self, timeout):
        return http.client.HTTPSConnection(HOST, self.port, timeout=timeout,
                                           context=self.context)


class TLSServer(Server):
    """A harness Server that speaks HTTPS: /healthz is polled over TLS, verified with the CA."""

    def __init__(self, args, cafile):
        super().__init__(args)
        self.context = trusting(cafile)

    def _wait_healthy(self):
        deadline = time.monotonic() + START_TIMEOUT
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("jobqd exited with %d at start" % self.proc.returncode)
            c = TLSClient(self.port, self.context, timeout=2)
            try:
                if c.get("/healthz").status == 200:
                    return
            except (OSError, http.client.HTTPException) as e:
                last = e
            finally:
                c.close()
            time.sleep(0.05)
        raise AssertionError("no /healthz answer over TLS within %.0fs (last: %r)"
                             % (START_TIMEOUT, last))

    def client(self, timeout=REQUEST_TIMEOUT):
        return TLSClient(self.port, self.context, timeout=timeout)


class TLSTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.pki = tempfile.mkdtemp(prefix="jobq-tls-")
        cls.server = None
        try:
            make_pki(cls.pki)
            cls.sqs_port = harness.free_port()
            cls.server = TLSServer(["--tls-cert", os.path.join(cls.pki, "server.pem"),
                                    "--tls-key", os.path.join(cls.pki, "server.key"),
                                    "--sqs-listen", "%s:%d" % (HOST, cls.sqs_port)],
                                   os.path.join(cls.pki, "ca.pem"))
            cls.server.start()
        except Exception:
            if cls.server is not None:
                cls.server.cleanup()
            shutil.rmtree(cls.pki, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.pki, ignore_errors=True)

    def assert_still_serving(self):
        c = self.server.client(timeout=10)
        try:
            r = c.get("/healthz")
            self.assertEqual(r.status, 200, r)
        finally:
            c.close()

    def test_job_lifecycle_over_verified_tls(self):
        # One keep-alive connection for the whole life of a job.
        job = self.enqueue({"over": "tls"})
        got = self.claim_one(worker="tls-worker")
        self.assertEqual(got["id"], job["id"])
        r = self.act(got["id"], "heartbeat", {"lease_token": got["lease_token"]})
        r = self.act(got["id"], "complete", {"lease_token": got["lease_token"], "result": [1]})
        self.assertEqual(r.json["status"], "succeeded")
        self.assertEqual(r.json["result"], [1])
        self.assertEqual(self.get_job(job["id"])["status"], "succeeded")
        # The certificate seen is the one we made.
        sock = socket.create_connection((HOST, self.server.port), timeout=10)
        with self.server.context.wrap_socket(sock, server_hostname=HOST) as tls:
            cert = tls.getpeercert()
            self.assertIn(("IP Address", "127.0.0.1"), cert.get("subjectAltName", ()))
            self.assertIn(tls.version(), ("TLSv1.2", "TLSv1.3"))

    def test_untrusting_client_fails_verification(self):
        ctx = ssl.create_default_context()  # the system's CAs: not ours
        c = TLSClient(self.server.port, ctx, timeout=10)
        try:
            with self.assertRaises(ssl.SSLCertVerificationError):
                c.get("/healthz")
        finally:
            c.close()
        # Our CA, but a name the certificate does not carry.
        ctx = trusting(os.path.join(self.pki, "ca.pem"))
        sock = socket.create_connection((HOST, self.server.port), timeout=10)
        try:
            with self.assertRaises(ssl.SSLCertVerificationError):
                ctx.wrap_socket(sock, server_hostname="jobq.example")
        finally:
            sock.close()
        self.assert_still_serving()

    def test_tls_1_2_client_served(self):
        # The server takes TLS 1.2 as well as 1.3 (older versions are off: TLS_PRIORITIES).
        ctx = trusting(os.path.join(self.pki, "ca.pem"))
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        c = TLSClient(self.server.port, ctx, timeout=10)
        try:
            self.assertEqual(c.get("/healthz").status, 200)
            self.assertEqual(c.conn.sock.version(), "TLSv1.2")
        finally:
            c.close()

    def test_sqs_listener_speaks_tls(self):
        """--sqs-listen serves over the main listener's TLS, and its queue URLs say https
        (docs/sqs.md, Options)."""
        c = TLSClient(self.sqs_port, self.server.context)
        self.addCleanup(c.close)
        r = c.request("POST", "/", raw=b'{"QueueName": "tls-q"}', headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.CreateQueue"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["QueueUrl"],
                         "https://%s:%d/000000000000/tls-q" % (HOST, self.sqs_port))

    def test_plain_http_is_closed_without_a_hang(self):
        for attempt in range(3):
            sock = socket.create_connection((HOST, self.server.port), timeout=10)
            got = b""
            try:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    chunk = sock.recv(4096)  # socket.timeout here would be the hang
                    if not chunk:
                        break
                    got += chunk
                else:
                    self.fail("the connection stayed open after plain HTTP")
            except ConnectionResetError:
                pass
            finally:
                sock.close()
            # At most a TLS alert: never an HTTP answer in the clear.
            self.assertFalse(got.startswith(b"HTTP/"), got[:100])
            self.assertLess(len(got), 64, got[:100])
        self.assert_still_serving()
        # And a real client still runs a job.
        self.enqueue()
        self.claim_one()


class TLSStartup(unittest.TestCase):
    """Bad TLS files fail start-up with a clear message and a non-zero exit."""

    @classmethod
    def setUpClass(cls):
        cls.pki = tempfile.mkdtemp(prefix="jobq-tls-start-")
        try:
            make_pki(cls.pki)
        except Exception:
            shutil.rmtree(cls.pki, ignore_errors=True)
            raise
        with open(os.path.join(cls.pki, "garbage.pem"), "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)

    def run_jobqd(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        db = os.path.join(self.pki, "jobq.db")
        cmd = WRAPPER + [jobqd_path(), "--listen", "127.0.0.1:0", "--db", db] + list(args)
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                           timeout=START_TIMEOUT)
        return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")

    def test_bad_files_fail_start_up(self):
        p = lambda name: os.path.join(self.pki, name)  # noqa: E731
        cases = (
            (("--tls-cert", p("server.pem")), "must be given together"),
            (("--tls-key", p("server.key")), "must be given together"),
            (("--tls-cert", p("missing.pem"), "--tls-key", p("server.key")),
             "cannot read the TLS certificate"),
            (("--tls-cert", p("server.pem"), "--tls-key", p("missing.key")),
             "cannot read the TLS key"),
            (("--tls-cert", p("server.key"), "--tls-key", p("server.pem")),
             "cannot use the TLS certificate"),
            (("--tls-cert", p("garbage.pem"), "--tls-key", p("server.key")), "TLS"),
            (("--tls-cert", p("server.pem"), "--tls-key", p("other.key")), "TLS"),
        )
        for args, message in cases:
            with self.subTest(args=[os.path.basename(a) for a in args]):
                code, out = self.run_jobqd(*args)
                self.assertNotEqual(code, 0, out)
                self.assertIn(message, out)
                self.assertNotIn("listening on", out)

    def test_silent_client_closed_after_idle_timeout(self):
        # A client that connects and never starts the handshake holds a connection only for
        # --idle-timeout seconds.
        srv = TLSServer(["--tls-cert", os.path.join(self.pki, "server.pem"),
                         "--tls-key", os.path.join(self.pki, "server.key"), "--idle-timeout", "1"],
                        os.path.join(self.pki, "ca.pem"))
        self.addCleanup(srv.cleanup)
        srv.start()
        sock = socket.create_connection((HOST, srv.port), timeout=15)
        started = time.monotonic()
        try:
            data = b""
            while True:
                chunk = sock.recv(4096)  # socket.timeout: the connection was never closed
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        finally:
            sock.close()
        waited = time.monotonic() - started
        self.assertGreaterEqual(waited, 0.5, "closed before the idle timeout")
        self.assertLess(len(data), 64, data)  # at most a TLS alert
        srv.stop_checked()

    def test_tls_from_environment(self):
        srv = TLSServer([], os.path.join(self.pki, "ca.pem"))
        srv.env = {"JOBQ_TLS_CERT": os.path.join(self.pki, "server.pem"),
                   "JOBQ_TLS_KEY": os.path.join(self.pki, "server.key")}
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client(timeout=10)
        try:
            self.assertEqual(c.post("/jobs", {"payload": 1}).status, 201)
        finally:
            c.close()
        srv.stop_checked()
        with open(srv.log_path, "rb") as f:
            self.assertIn(b"tls on", f.read())


if __name__ == "__main__":
    unittest.main()
