"""Run black-box test modules (python3 run_backend.py test_x [test_y ...]) with `unittest -v`
on the backend JOBQ_TEST_BACKEND names. ctest runs the pg variants (blackbox.pg.<module>)
through this: under pg, when the test cluster's variables (harness.PG_VARS, written by
scripts/pg_cluster.sh to DIR/env) are not set, it says so and exits 77, which ctest counts as
skipped; with JOBQ_REQUIRE_PG=1 it exits 1 instead, a failure."""

import os
import sys

import harness

SKIPPED = 77  # ctest's SKIP_RETURN_CODE for these tests


def main(modules):
    if harness.backend() == "pg":
        why = harness.pg_missing()
        if why:
            if os.environ.get("JOBQ_REQUIRE_PG") == "1":
                sys.stderr.write("FAILED: JOBQ_REQUIRE_PG=1 but %s\n" % why)
                return 1
            sys.stderr.write("SKIPPED: %s\n" % why)
            return SKIPPED
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "unittest", "-v"] + modules)
    return 1  # not reached


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.stderr.write("usage: run_backend.py test_module...\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
