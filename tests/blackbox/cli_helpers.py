"""Running the command-line client `jobq` (harness.jobq_cli_path()) from the black-box tests:
with its output in pipes (JSON mode) or on a pseudo-terminal (tables), with a clean
environment (no JOBQ_* from the caller) pointed at a test server, every run with a time-out.
"""

import os
import pty
import select
import subprocess
import time

from harness import HOST, jobq_cli_path

RUN_TIMEOUT = 30.0  # seconds for one jobq command


def cli_env(port=None, **extra):
    """os.environ without JOBQ_*, plus JOBQ_URL for `port` (when given) and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
    if port is not None:
        env["JOBQ_URL"] = "http://%s:%d" % (HOST, port)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_jobq(args, env, stdin=None, timeout=RUN_TIMEOUT):
    """Run jobq ARGS with stdout and stderr in pipes. Returns (exit code, stdout, stderr) as
    text. `stdin` is text fed to it (else /dev/null)."""
    p = subprocess.run([jobq_cli_path()] + list(args), input=stdin,
                       stdin=None if stdin is not None else subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def run_jobq_tty(args, env, timeout=RUN_TIMEOUT):
    """Run jobq ARGS with stdout on a pseudo-terminal (stderr in a pipe). Returns (exit
    code, stdout, stderr); stdout's "\\r\\n" become "\\n"."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([jobq_cli_path()] + list(args), stdin=subprocess.DEVNULL,
                             stdout=slave, stderr=subprocess.PIPE, env=env)
    finally:
        os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                if p.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            out += chunk
        err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))[1]
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    return (p.returncode, out.decode("utf-8", "replace").replace("\r\n", "\n"),
            err.decode("utf-8", "replace"))
