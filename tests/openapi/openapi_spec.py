"""openapi.yaml as data, for the checks that compare it with the server: check_limits.py
(ctest openapi.limits) and the black-box SchemaLimits test (tests/blackbox/test_errors.py).

load() turns openapi.yaml into one JSON document with every $ref resolved, using the pinned
@redocly/cli that openapi.lint uses (scripts/deps.sh installs it: npm ci in tests/openapi), so
nothing beyond the standard library is needed on the Python side. request_fields() walks what
a client sends: each operation's JSON body (the body itself, each property, each array's
items, recursively) and its path and query parameters.
"""

import json
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REDOCLY = os.path.join(HERE, "node_modules", ".bin", "redocly")
METHODS = ("get", "put", "post", "delete", "patch")
# The schema keywords that state a limit of a request value. x-jobq-max-bytes is ours: the
# byte limit of a string whose maxLength counts characters (openapi.yaml's info says why).
LIMIT_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                  "maxLength", "minItems", "maxItems", "uniqueItems", "pattern", "enum",
                  "x-jobq-max-bytes")


def load(path):
    """openapi.yaml at path as a dict, every $ref resolved. Raises RuntimeError when the
    linter is not installed or fails."""
    if not os.access(REDOCLY, os.X_OK):
        raise RuntimeError("%s is missing: run scripts/deps.sh (npm ci in tests/openapi)"
                           % REDOCLY)
    env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true",
               NO_COLOR="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "openapi.json")
        r = subprocess.run([REDOCLY, "bundle", path, "--dereferenced", "--ext", "json",
                            "--output", out], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0 or not os.path.exists(out):
            raise RuntimeError("redocly bundle %s failed:\n%s" % (path, r.stdout.decode()))
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def merged(schema):
    """The schema with its allOf parts folded in (properties and required lists joined, other
    keywords taken from the outermost schema that has them)."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema.get("allOf", ()):
        part = merged(part)
        for k, v in part.items():
            if k == "properties":
                out["properties"] = dict(v, **out.get("properties", {}))
            elif k == "required":
                out["required"] = sorted(set(out.get("required", [])) | set(v))
            else:
                out.setdefault(k, v)
    return out


def _walk(where, schema):
    """(where, merged schema) for schema and everything inside it a client sends."""
    schema = merged(schema)
    yield where, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk("%s.%s" % (where, name), sub)
    if isinstance(schema.get("items"), dict):
        yield from _walk(where + "[]", schema["items"])


def operations(doc):
    """(operation name "METHOD /path", operation object, its parameters), in file order."""
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = {(p["in"], p["name"]): p for p in item.get("parameters", [])}
            params.update({(p["in"], p["name"]): p for p in op.get("parameters", [])})
            yield "%s %s" % (method.upper(), path), op, list(params.values())


def request_fields(doc):
    """(operation, where, merged schema, required) for every value a client sends: where is
    "body", "body.queue", "body.requires[]", "body.jobs[].priority", "query.limit" or
    "path.name"; required says whether the value must be present (a body: requestBody's
    required; a property: listed in its object's required)."""
    for name, op, params in operations(doc):
        for p in params:
            if p["in"] in ("path", "query"):
                yield (name, "%s.%s" % (p["in"], p["name"]), merged(p.get("schema", {})),
                       bool(p.get("required")))
        body = op.get("requestBody")
        if not body:
            continue
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        required = {"body": bool(body.get("required"))}
        for where, s in _walk("body", schema):
            for prop in s.get("required", ()):
                required["%s.%s" % (where, prop)] = True
            yield name, where, s, required.get(where, False)


def limit_lines(doc):
    """The limits openapi.yaml states on requests, as the set of (operation, where, keyword,
    value) that tests/openapi/limits.c prints for the server: every LIMIT_KEYWORDS keyword,
    "required" "true" for a value that must be present, and "not-together" "a,b" for each
    pair an object forbids together (together_pairs). Values are text: numbers in decimal, booleans in
    lowercase, an enum's members sorted and comma-joined."""
    lines = set()
    for op, where, schema, required in request_fields(doc):
        if required:
            lines.add((op, where, "required", "true"))
        for k in LIMIT_KEYWORDS:
            if k in schema:
                lines.add((op, where, k, text(schema[k])))
        for together in together_pairs(schema):
            lines.add((op, where, "not-together", ",".join(sorted(together))))
    return lines


def together_pairs(schema):
    """The member lists an object schema forbids together: `not: {required: [a, b]}`, or
    several as `not: {anyOf: [{required: [a, b]}, ...]}`."""
    n = schema.get("not", {})
    parts = [n] + list(n.get("anyOf", ()))
    return [p["required"] for p in parts if p.get("required")]


def text(v):
    """A keyword's value as limits.c prints it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(sorted(str(x) for x in v))
    return str(v)


# ----- values at and past the limits, for the black-box test --------------------------------

# Characters to fill a string with, widest first: 4, 2 and 1 bytes of UTF-8.
FILL = ("\U0001F600", "\u00e9", "q", "1")
# Strings that break a pattern while their length is in bounds.
OFF_PATTERN = ("a\u0000", "a b", "A")


def fits(schema, s):
    """1 when s is within the string schema's pattern (a JSON Schema pattern is not anchored
    by itself) and lengths."""
    p = schema.get("pattern")
    return ((p is None or re.search(p, s) is not None) and
            schema.get("minLength", 0) <= len(s) <= schema.get("maxLength", len(s)))


def sample(schema, i=0, fill=None):
    """A value the schema accepts, different for different i where it can be. fill: property
    values to use in objects that have them (e.g. {"queue": ...})."""
    schema = merged(schema)
    if "enum" in schema:
        return schema["enum"][i % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "integer":
        v = schema.get("minimum", 0) + i
        return v if "maximum" not in schema else min(v, schema["maximum"])
    if kind == "boolean":
        return True
    if kind == "string":
        for c in ("x", "1"):
            if fits(schema, "%s%d" % (c, i)):
                return "%s%d" % (c, i)
        raise ValueError("no sample for %r" % schema)
    if kind == "array":
        return [sample(schema["items"], k, fill) for k in range(schema.get("minItems", 1))]
    if kind == "object":
        props = schema.get("properties", {})
        out = {k: sample(props[k], i, fill) for k in schema.get("required", ())}
        out.update({k: v for k, v in (fill or {}).items() if k in props})
        return out
    return i  # any JSON


def utf8_len(s):
    return len(s.encode("utf-8"))


def boundary_cases(schema, fill=None):
    """(label, value, accepted) for a value of the schema at each of its limits (accepted)
    and just past it (refused): integers at and past minimum and maximum; strings of
    maxLength characters of the widest character the pattern allows, and one more (refused
    when it is past the byte limit too, or there is none); of x-jobq-max-bytes bytes of ASCII
    and of 2-byte characters, and one character more; empty below minLength; in bounds but
    off the pattern; arrays at and past minItems and maxItems; every enum member and one
    that is not."""
    schema = merged(schema)
    kind = schema.get("type")
    cases = []
    if "enum" in schema:
        cases += [("enum %s" % v, v, True) for v in schema["enum"]]
        cases.append(("not in enum", "bogus", False))
        return cases
    if kind == "integer":
        if "minimum" in schema:
            lo = schema["minimum"]
            cases += [("minimum", lo, True), ("minimum - 1", lo - 1, False)]
        if "maximum" in schema:
            hi = schema["maximum"]
            cases += [("maximum", hi, True), ("maximum + 1", hi + 1, False)]
    elif kind == "string":
        most = schema.get("x-jobq-max-bytes")
        n = schema.get("maxLength")
        wide = [c for c in FILL if n is not None and fits(schema, c * n)]
        if wide:
            c = wide[0]
            past = most is None or utf8_len(c * (n + 1)) > most
            cases += [("maxLength of U+%04X" % ord(c), c * n, True),
                      ("maxLength + 1 of U+%04X" % ord(c), c * (n + 1), not past)]
        if most is not None:
            for c in ("a", "\u00e9"):
                k = most // utf8_len(c)
                loose = dict(schema, maxLength=most)
                if fits(loose, c * k):
                    cases += [("%d bytes of U+%04X" % (most, ord(c)), c * k, True),
                              ("%d bytes of U+%04X" % (utf8_len(c * (k + 1)), ord(c)),
                               c * (k + 1), False)]
        if schema.get("minLength", 0) == 1:
            cases.append(("empty", "", False))
        if "pattern" in schema:
            for s in OFF_PATTERN:
                if not fits(schema, s) and fits(dict(schema, pattern=None), s):
                    cases.append(("off the pattern: %r" % s, s, False))
    elif kind == "array":
        items = schema.get("items", {})
        for label, k, ok in (("minItems - 1", schema.get("minItems", 0) - 1, False),
                             ("minItems", schema.get("minItems"), True),
                             ("maxItems", schema.get("maxItems"), True),
                             ("maxItems + 1", (schema.get("maxItems") or -2) + 1, False)):
            if k is not None and k >= 0 and (k > 0 or "minItems" in schema):
                cases.append((label, [sample(items, i, fill) for i in range(k)], ok))
    return cases
