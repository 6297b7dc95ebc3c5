"""ctest openapi.routes: the router's table and openapi.yaml's paths must list the same
(method, path) pairs, both ways.

usage: check_routes.py OPENAPI_YAML ROUTES_COMMAND...

The routes command prints one "METHOD PATTERN" line per route (tests/openapi/routes.c calls
router_print). openapi.yaml is read with a small indentation-based reader: under the
top-level `paths:` key, each two-space-indented key starting with "/" is a path, and each
four-space-indented HTTP method key under it is an operation. Standard library only.
"""

import re
import subprocess
import sys

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def openapi_routes(path):
    routes = []
    in_paths = False
    current = None
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip(" "))
            if indent == 0:
                in_paths = line.startswith("paths:")
                current = None
                continue
            if not in_paths:
                continue
            m = re.match(r"^  ('?)(/[^':]*)\1:\s*$", line)
            if indent == 2:
                if not m:
                    sys.exit("%s:%d: unexpected line under paths: %r" % (path, n, line))
                current = m.group(2)
                continue
            m = re.match(r"^    ([a-z]+):", line)
            if indent == 4 and m and m.group(1) in METHODS:
                if current is None:
                    sys.exit("%s:%d: method outside a path" % (path, n))
                routes.append((m.group(1).upper(), current))
    return routes


def router_routes(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, timeout=60).stdout.decode()
    routes = []
    for line in out.splitlines():
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            sys.exit("bad router line: %r" % line)
        routes.append((parts[0], parts[1]))
    return routes


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    spec = openapi_routes(sys.argv[1])
    table = router_routes(sys.argv[2:])
    ok = True
    for name, routes in (("openapi.yaml", spec), ("router table", table)):
        dups = sorted({r for r in routes if routes.count(r) > 1})
        if dups:
            ok = False
            print("%s lists these more than once: %s" % (name, dups))
    if not table:
        ok = False
        print("the router table is empty")
    for r in sorted(set(table) - set(spec)):
        ok = False
        print("in the router but not in openapi.yaml: %s %s" % r)
    for r in sorted(set(spec) - set(table)):
        ok = False
        print("in openapi.yaml but not in the router: %s %s" % r)
    print("%d routes in the router, %d operations in openapi.yaml" % (len(table), len(spec)))
    if not ok:
        return 1
    print("router table and openapi.yaml agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
