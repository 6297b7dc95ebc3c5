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
    "required" "true" for a value that must be present, and "not-together" "a,b" for an
    object's `not: {required: [a, b]}`. Values are text: numbers in decimal, booleans in
    lowercase, an enum's members sorted and comma-joined."""
    lines = set()
    for op, where, schema, required in request_fields(doc):
        if required:
            lines.add((op, where, "required", "true"))
        for k in LIMIT_KEYWORDS:
            if k in schema:
                lines.add((op, where, k, text(schema[k])))
        together = schema.get("not", {}).get("required")
        if together:
            lines.add((op, where, "not-together", ",".join(sorted(together))))
    return lines


def text(v):
    """A keyword's value as limits.c prints it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(sorted(str(x) for x in v))
    return str(v)
