"""Static checks of docker/compose.yaml (no Docker here to run it): that it parses, builds
docker/Dockerfile from the repository, keeps the database on a named volume at /var/lib/jobq,
points JOBQ_AUTH_TOKEN_FILE at a declared file secret, and stops with SIGTERM.

    python3 tests/docker/check_compose.py docker/compose.yaml

Prints one line per failed check and exits 1 if any failed; needs PyYAML (python3-yaml)."""

import os
import sys

import yaml


def main(path):
    base = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    errors = []

    def need(cond, what):
        if not cond:
            errors.append(what)

    svc = (doc.get("services") or {}).get("jobq") or {}
    need(svc, "a service named jobq")
    build = svc.get("build") or {}
    context = os.path.normpath(os.path.join(base, build.get("context", ".")))
    dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
    need(os.path.isfile(dockerfile), f"build: {dockerfile} exists")
    need(os.path.isfile(os.path.join(context, ".dockerignore")), "build: context has .dockerignore")

    volumes = svc.get("volumes") or []
    named = [v.split(":")[0] for v in volumes
             if isinstance(v, str) and v.endswith(":/var/lib/jobq")]
    need(len(named) == 1, "volumes: one NAME:/var/lib/jobq")
    need(named and named[0] in (doc.get("volumes") or {}), "volumes: the volume is declared")

    env = svc.get("environment") or {}
    need(isinstance(env, dict), "environment: a mapping")
    token_file = env.get("JOBQ_AUTH_TOKEN_FILE", "") if isinstance(env, dict) else ""
    need(token_file.startswith("/run/secrets/"),
         "environment: JOBQ_AUTH_TOKEN_FILE=/run/secrets/NAME")
    secret = token_file[len("/run/secrets/"):]
    need(secret in (svc.get("secrets") or []), f"secrets: the service uses {secret!r}")
    declared = (doc.get("secrets") or {}).get(secret) or {}
    need("file" in declared, f"secrets: {secret!r} is declared with a file")

    need(svc.get("stop_signal") == "SIGTERM", "stop_signal: SIGTERM")
    need(bool(svc.get("stop_grace_period")), "stop_grace_period is set")
    need(svc.get("read_only") is not True or "/tmp" in (svc.get("tmpfs") or []),
         "read_only needs a tmpfs on /tmp (JOBQ_AUTH_TOKEN writes its file there)")

    for e in errors:
        print(f"compose.yaml: failed: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
