"""ctest openapi.limits: every limit the server enforces on a request is stated by openapi.yaml,
and openapi.yaml states no other, so that a client generated from the document, or a tester
driven by it, never builds a request the server refuses as invalid_request.

usage: check_limits.py OPENAPI_YAML LIMITS_COMMAND...

The limits command (tests/openapi/limits.c) prints the server's limits, one
"OPERATION<TAB>WHERE<TAB>KEYWORD<TAB>VALUE" line each, from the constants the parsers use;
openapi_spec.limit_lines() reads the same lines off openapi.yaml's request bodies and
parameters. The two sets must be equal. Besides, each value a client sends must be bounded in
the document (an integer has a minimum and, unless it is an int64, a maximum; a string a
maxLength or an enum; an array a maxItems), and a byte limit (x-jobq-max-bytes) must be
named in its description ("N bytes").
"""

import subprocess
import sys

import openapi_spec


def server_lines(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, timeout=60).stdout.decode()
    lines = []
    for raw in out.splitlines():
        parts = raw.split("\t")
        if len(parts) != 4:
            sys.exit("bad limits line: %r" % raw)
        op, where, keyword, value = parts
        if keyword == "enum" or keyword == "not-together":
            value = ",".join(sorted(value.split(",")))
        lines.append((op, where, keyword, value))
    return lines


def unbounded(doc):
    """Values a client sends that openapi.yaml leaves without a bound, with why."""
    found = []
    for op, where, s, _ in openapi_spec.request_fields(doc):
        kind = s.get("type")
        why = None
        if kind == "integer" and ("minimum" not in s or
                                  ("maximum" not in s and s.get("format") != "int64")):
            why = "an integer without minimum and maximum"
        elif kind == "string" and "maxLength" not in s and "enum" not in s:
            why = "a string without maxLength or enum"
        elif kind == "array" and "maxItems" not in s:
            why = "an array without maxItems"
        elif "x-jobq-max-bytes" in s:
            n = s["x-jobq-max-bytes"]
            if "%d bytes" % n not in " ".join(s.get("description", "").split()):
                why = "x-jobq-max-bytes %d not named in its description" % n
            elif s.get("maxLength") != n // 4:
                why = "maxLength is not x-jobq-max-bytes / 4"
        if why:
            found.append("%s %s: %s" % (op, where, why))
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    doc = openapi_spec.load(sys.argv[1])
    spec = openapi_spec.limit_lines(doc)
    server = server_lines(sys.argv[2:])
    ok = True
    dups = sorted({x for x in server if server.count(x) > 1})
    if dups:
        ok = False
        print("the server's table lists these more than once: %s" % dups)
    if len(server) < 50:
        ok = False
        print("the server's table has only %d lines" % len(server))
    for x in sorted(set(server) - spec):
        ok = False
        print("the server enforces, openapi.yaml does not state: %s" % "  ".join(x))
    for x in sorted(spec - set(server)):
        ok = False
        print("openapi.yaml states, the server does not enforce: %s" % "  ".join(x))
    for why in unbounded(doc):
        ok = False
        print("openapi.yaml: %s" % why)
    print("%d limits in the server's table, %d in openapi.yaml" % (len(set(server)), len(spec)))
    if not ok:
        return 1
    print("openapi.yaml states exactly the limits the server enforces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
