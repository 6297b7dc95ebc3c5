#!/usr/bin/env python3
"""jobq producer: enqueue COUNT jobs on QUEUE and print their ids, one a line.

    python3 producer.py QUEUE COUNT [PAYLOAD_JSON]

Job i (1..COUNT) gets the payload {"n": i} unless PAYLOAD_JSON is given. The server is
$JOBQ_URL (default http://127.0.0.1:8080); $JOBQ_TOKEN, when set, is sent as a bearer token.
Python standard library only.
"""

import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("JOBQ_URL", "http://127.0.0.1:8080").rstrip("/")
TOKEN = os.environ.get("JOBQ_TOKEN")


def post(path, body):
    """POST body as JSON; returns (status, parsed answer). Network errors raise OSError."""
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if TOKEN:
        req.add_header("Authorization", "Bearer " + TOKEN)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit("usage: producer.py QUEUE COUNT [PAYLOAD_JSON]")
    queue, count = argv[0], int(argv[1])
    fixed = json.loads(argv[2]) if len(argv) == 3 else None
    for i in range(1, count + 1):
        payload = fixed if fixed is not None else {"n": i}
        status, job = post("/jobs", {"queue": queue, "payload": payload})
        if status not in (200, 201):
            sys.exit("enqueue failed: HTTP %d %s" % (status, json.dumps(job)))
        print(job["id"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
