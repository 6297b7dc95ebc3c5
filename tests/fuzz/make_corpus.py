#!/usr/bin/env python3
"""Write the seed corpus of the fuzz targets from one table of representative requests (the
shapes the black-box tests send: every route, valid bodies, each limit, hostile input).

    python3 tests/fuzz/make_corpus.py        (re)writes tests/fuzz/corpus/{http,parse}/seed-*

corpus/http/ gets raw HTTP/1.1 bytes (fuzz_http), corpus/parse/ gets "METHOD PATH\\nBODY"
(fuzz_parse). Files named crash-* (inputs that once crashed, kept as regression tests) are
never touched. Deterministic: the same table gives the same files.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

TOKEN = "fuzzFUZZfuzzFUZZfuzzFUZZfuzzFUZZ"  # fuzz_http gives every claim this lease token


def j(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


# (name, method, path, body bytes or None)
REQUESTS = [
    ("enqueue-min", "POST", "/jobs", j({"payload": 1})),
    ("enqueue-full", "POST", "/jobs", j({
        "queue": "emails.high", "payload": {"to": "a@b.c", "n": [1, 2.5, True, None]},
        "priority": -7, "delay_seconds": 30, "max_attempts": 3, "max_runtime_seconds": 60,
        "requires": ["gpu", "linux", "gpu"], "idempotency_key": "k-1"})),
    ("enqueue-run-at", "POST", "/jobs", j({"payload": "x", "run_at": 1763700100})),
    ("enqueue-both-times", "POST", "/jobs", j({"payload": 1, "run_at": 1, "delay_seconds": 1})),
    ("enqueue-empty", "POST", "/jobs", b""),
    ("enqueue-null-payload", "POST", "/jobs", b'{"payload": null, "queue": null}'),
    ("enqueue-unicode", "POST", "/jobs",
     '{"payload": "h\u00e9 \u20ac \U0001F600 \\ud83d\\ude00 \\n\\t\\"", "queue": "q"}'.encode()),
    ("enqueue-nul-escape", "POST", "/jobs", b'{"payload": "a\\u0000b", "idempotency_key": "\\u0000"}'),
    ("enqueue-bad-utf8", "POST", "/jobs", b'{"payload": "\xff\xc3\xed\xa0\x80"}'),
    ("enqueue-lone-surrogate", "POST", "/jobs", b'{"payload": "\\ud800x"}'),
    ("enqueue-big-numbers", "POST", "/jobs",
     b'{"payload": 1e400, "priority": 9223372036854775808, "max_attempts": 1e2}'),
    ("enqueue-neg-zero", "POST", "/jobs", b'{"payload": -0.0e-0, "priority": -0, "max_attempts": 1.0}'),
    ("enqueue-priority-limit", "POST", "/jobs", b'{"payload": 1, "priority": -2147483649}'),
    ("enqueue-depth-64", "POST", "/jobs", b'{"payload": ' + b"[" * 63 + b"]" * 63 + b"}"),
    ("enqueue-depth-65", "POST", "/jobs", b'{"payload": ' + b"[" * 64 + b"]" * 64 + b"}"),
    ("enqueue-dup-keys", "POST", "/jobs", b'{"payload": 1, "payload": 2, "queue": "a", "queue": 3}'),
    ("enqueue-wrong-types", "POST", "/jobs",
     b'{"payload": {}, "queue": 5, "requires": "gpu", "idempotency_key": []}'),
    ("enqueue-long-queue", "POST", "/jobs", j({"payload": 1, "queue": "q" * 129})),
    ("enqueue-not-object", "POST", "/jobs", b"[1, 2, 3]"),
    ("enqueue-trailing", "POST", "/jobs", b'{"payload": 1} x'),
    ("batch", "POST", "/jobs/batch", j({"jobs": [{"payload": 1}, {"payload": [2], "queue": "b"},
                                                  {"payload": None, "priority": 5}]})),
    ("batch-bad-element", "POST", "/jobs/batch", j({"jobs": [{"payload": 1}, 7, {"queue": "x"}]})),
    ("batch-empty", "POST", "/jobs/batch", j({"jobs": []})),
    ("claim", "POST", "/claim", j({"worker_id": "w1", "queue": "default", "lease_seconds": 30,
                                   "max_jobs": 10})),
    ("claim-queues", "POST", "/claim", j({"worker_id": "w2", "queues": ["a", "b", "a"],
                                          "capabilities": ["gpu"]})),
    ("claim-wait", "POST", "/claim", j({"worker_id": "w3", "queue": "empty", "wait_seconds": 2})),
    ("claim-both", "POST", "/claim", j({"worker_id": "w", "queue": "a", "queues": ["b"]})),
    ("claim-limits", "POST", "/claim", j({"worker_id": "", "max_jobs": 101, "wait_seconds": 61})),
    ("heartbeat", "POST", "/jobs/1/heartbeat", j({"lease_token": TOKEN, "lease_seconds": 60,
                                                  "progress": {"done": 3}})),
    ("complete", "POST", "/jobs/1/complete", j({"lease_token": TOKEN, "result": {"ok": True}})),
    ("fail", "POST", "/jobs/1/fail", j({"lease_token": TOKEN, "error_code": "boom",
                                        "error_detail": {"trace": "x"}, "retry": False,
                                        "retry_in_seconds": 5})),
    ("fail-no-token", "POST", "/jobs/1/fail", j({"retry": "yes"})),
    ("cancel", "POST", "/jobs/1/cancel", None),
    ("retry", "POST", "/jobs/1/retry", None),
    ("get", "GET", "/jobs/1", None),
    ("get-huge-id", "GET", "/jobs/9223372036854775808", None),
    ("get-zero-id", "GET", "/jobs/0", None),
    ("list", "GET", "/jobs?queue=default&status=queued&limit=10&cursor=1z", None),
    ("list-bad", "GET", "/jobs?limit=1e400&status=nope&cursor=zzzzzzzzzzzzzz", None),
    ("queues", "GET", "/queues", None),
    ("healthz", "GET", "/healthz", None),
    ("readyz", "GET", "/readyz", None),
    ("metrics", "GET", "/metrics", None),
    ("not-found", "GET", "/nope/%00/..", None),
    ("bad-method", "DELETE", "/jobs", None),
]


def http_request(method, path, body, extra=()):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: jobq"]
    if body is not None:
        lines.append("Content-Type: application/json")
        lines.append("Content-Length: %d" % len(body))
    lines.extend(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def chunked(body, size=7):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


# Raw HTTP inputs that only make sense on the wire.
RAW = [
    ("pipelined", http_request("POST", "/jobs", j({"payload": 1, "queue": "p"}))
     + http_request("POST", "/claim", j({"worker_id": "w", "queue": "p"}))
     + http_request("GET", "/queues", None)),
    ("chunked", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nTransfer-Encoding: chunked\r\n"
     b"Content-Type: application/json\r\n\r\n" + chunked(j({"payload": {"a": [1, 2, 3]}}))),
    ("chunked-broken", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\n{}\r\n0\r\n\r\n"),
    ("chunked-overflow", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
    ("expect-continue", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nExpect: 100-continue\r\n"
     b"Content-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"payload\": 1}"),
    ("content-length-absurd", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\n"
     b"Content-Length: 99999999999999999999999999\r\n\r\n{}"),
    ("content-length-too-large", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\n"
     b"Content-Length: 10000000\r\n\r\n{}"),
    ("content-length-negative", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nContent-Length: -5\r\n\r\n"),
    ("content-length-twice", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nContent-Length: 2\r\n"
     b"Content-Length: 3\r\n\r\n{}x"),
    ("wrong-content-type", http_request("POST", "/jobs", None, ["Content-Type: text/plain",
                                                              "Content-Length: 14"])
     + b'{"payload": 1}'),
    ("json-charset", http_request("POST", "/jobs", None,
                                  ["Content-Type: Application/JSON; charset=utf-8",
                                   "Content-Length: 14"]) + b'{"payload": 1}'),
    ("http10", b"GET /healthz HTTP/1.0\r\n\r\n"),
    ("http-version-bad", b"GET /healthz HTTP/9.9\r\nHost: jobq\r\n\r\n"),
    ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(40))),
    ("nul-in-header", b"GET /healthz HTTP/1.1\r\nHost: jo\x00bq\r\nX-A: \xff\xfe\r\n\r\n"),
    ("header-fold", b"GET /healthz HTTP/1.1\r\nHost: jobq\r\nX-Long: a\r\n  continued\r\n\r\n"),
    ("long-url", b"GET /jobs?" + b"a" * 3000 + b" HTTP/1.1\r\nHost: jobq\r\n\r\n"),
    ("incomplete", b"POST /jobs HTTP/1.1\r\nHost: jobq\r\nContent-Length: 100\r\n\r\n{\"pay"),
    ("head", b"HEAD /healthz HTTP/1.1\r\nHost: jobq\r\n\r\nGET /readyz HTTP/1.1\r\nHost: jobq\r\n\r\n"),
    ("lifecycle", http_request("POST", "/jobs", j({"payload": 1, "queue": "life"}))
     + http_request("POST", "/claim", j({"worker_id": "w", "queue": "life"}))
     + http_request("POST", "/jobs/1/heartbeat", j({"lease_token": TOKEN, "progress": 1}))
     + http_request("POST", "/jobs/1/fail", j({"lease_token": TOKEN, "retry_in_seconds": 0}))
     + http_request("POST", "/claim", j({"worker_id": "w", "queue": "life"}))
     + http_request("POST", "/jobs/1/complete", j({"lease_token": TOKEN, "result": [1]}))
     + http_request("POST", "/jobs/1/retry", None)
     + http_request("POST", "/jobs/1/cancel", None)),
    ("claim-wait-then-enqueue",
     http_request("POST", "/claim", j({"worker_id": "w", "queue": "lp", "wait_seconds": 1}))
     + http_request("POST", "/jobs", j({"payload": 1, "queue": "lp"}))),
]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    http_dir = os.path.join(HERE, "corpus", "http")
    parse_dir = os.path.join(HERE, "corpus", "parse")
    for d in (http_dir, parse_dir):
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.startswith("seed-"):
                os.remove(os.path.join(d, name))
    n = 0
    for i, (name, method, path, body) in enumerate(REQUESTS):
        fname = "seed-%03d-%s" % (i, name)
        write(os.path.join(http_dir, fname), http_request(method, path, body))
        write(os.path.join(parse_dir, fname), ("%s %s\n" % (method, path)).encode() + (body or b""))
        n += 1
    for i, (name, data) in enumerate(RAW):
        write(os.path.join(http_dir, "seed-%03d-%s" % (100 + i, name)), data)
        n += 1
    print("wrote %d seed inputs under %s" % (n, os.path.join(HERE, "corpus")), file=sys.stderr)


if __name__ == "__main__":
    main()
