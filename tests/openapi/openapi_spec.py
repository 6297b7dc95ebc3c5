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


NULL = {"type": "null"}


def merged(schema):
    """The schema with its allOf parts folded in (properties and required lists joined, other
    keywords taken from the outermost schema that has them), and a value that may be null
    (openapi.yaml's ways to say it: `anyOf: [X, {type: 'null'}]`, `type: [T, 'null']`, null
    among an enum's members) as X or T with "nullable": True, so that its limits read as
    any other's."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    parts = list(schema.get("allOf", ()))
    alts = schema.get("anyOf", ())
    if len(alts) == 2 and NULL in alts:
        del out["anyOf"]
        out["nullable"] = True
        parts.append([a for a in alts if a != NULL][0])
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        out["nullable"] = True
        rest = [k for k in kind if k != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
    elif kind == "null":
        out["nullable"] = True
    if None in out.get("enum", ()):
        out["nullable"] = True
        out["enum"] = [v for v in out["enum"] if v is not None]
    for part in parts:
        part = merged(part)
        for k, v in part.items():
            if k == "properties":
                out["properties"] = dict(v, **out.get("properties", {}))
            elif k == "required":
                out["required"] = sorted(set(out.get("required", [])) | set(v))
            else:
                out.setdefault(k, v)
    return out


def body_schema(doc, op):
    """The schema of op's ("PUT /limits/{key}") JSON request body, or None."""
    for name, o, _ in operations(doc):
        if name == op:
            body = o.get("requestBody") or {}
            return body.get("content", {}).get("application/json", {}).get("schema")
    return None


def response_schema(doc, op, status):
    """The schema of op's JSON answer with this status, or None."""
    for name, o, _ in operations(doc):
        if name == op:
            answer = o.get("responses", {}).get(str(status)) or {}
            return answer.get("content", {}).get("application/json", {}).get("schema")
    return None


def _is(kind, v):
    if kind == "null":
        return v is None
    if kind == "boolean":
        return isinstance(v, bool)
    if kind == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "string":
        return isinstance(v, str)
    if kind == "array":
        return isinstance(v, list)
    if kind == "object":
        return isinstance(v, dict)
    raise ValueError("unknown type %r" % kind)


def valid(schema, v):
    """1 when v is valid against schema (dereferenced: load()), by the JSON Schema keywords
    openapi.yaml's schemas use (type, enum, const, the bounds, pattern, required,
    properties, items, allOf, anyOf, oneOf, not, if/then/else). maxLength counts characters;
    x-jobq-max-bytes is not applied. Enough to say which bodies the document accepts, without
    a JSON Schema library."""
    kind = schema.get("type")
    if kind is not None and not any(_is(k, v) for k in (kind if isinstance(kind, list)
                                                        else [kind])):
        return False
    if "enum" in schema and not any(v == e and type(v) is type(e) for e in schema["enum"]):
        return False
    if "const" in schema and not (v == schema["const"] and type(v) is type(schema["const"])):
        return False
    if _is("number", v):
        if v < schema.get("minimum", v) or v > schema.get("maximum", v):
            return False
    if isinstance(v, str):
        if not schema.get("minLength", 0) <= len(v) <= schema.get("maxLength", len(v)):
            return False
        if "pattern" in schema and not re.search(schema["pattern"], v):
            return False
    if isinstance(v, list):
        if not schema.get("minItems", 0) <= len(v) <= schema.get("maxItems", len(v)):
            return False
        if "items" in schema and not all(valid(schema["items"], x) for x in v):
            return False
    if isinstance(v, dict):
        if any(k not in v for k in schema.get("required", ())):
            return False
        props = schema.get("properties", {})
        if not all(valid(props[k], x) for k, x in v.items() if k in props):
            return False
    if not all(valid(s, v) for s in schema.get("allOf", ())):
        return False
    if "anyOf" in schema and not any(valid(s, v) for s in schema["anyOf"]):
        return False
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if valid(s, v)) != 1:
        return False
    if "not" in schema and valid(schema["not"], v):
        return False
    if "if" in schema:
        branch = schema.get("then" if valid(schema["if"], v) else "else")
        if branch is not None and not valid(branch, v):
            return False
    return True


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
