"""Static checks of docker/compose.yaml and docker/compose.pg.yaml (no Docker here to run
them): that each parses and builds docker/Dockerfile from the repository; that compose.yaml
keeps the SQLite database on a named volume at /var/lib/jobq; that compose.pg.yaml runs at
least two stateless jobqd replicas (no volume, each on its own port) on one PostgreSQL service
whose health they wait for, with the database password in a libpq password file (a secret)
and never in the URL, and PostgreSQL's data on a named volume; that every jobqd service points
JOBQ_AUTH_TOKEN_FILE at a declared file secret and stops with SIGTERM.

    python3 tests/docker/check_compose.py docker/compose.yaml [docker/compose.pg.yaml ...]

A file with a `postgres` service is checked as the PostgreSQL variant. Prints one line per
failed check and exits 1 if any failed; needs PyYAML (python3-yaml)."""

import os
import sys
import urllib.parse

import yaml


def secret_file(doc, svc, path, what, need):
    """path is /run/secrets/NAME of a secret svc uses and the file declares with a file."""
    need(path.startswith("/run/secrets/"), "%s=/run/secrets/NAME" % what)
    secret = path[len("/run/secrets/"):]
    need(secret in (svc.get("secrets") or []), "secrets: the service uses %r" % secret)
    declared = (doc.get("secrets") or {}).get(secret) or {}
    need("file" in declared, "secrets: %r is declared with a file" % secret)


def check_jobqd(doc, base, name, svc, need):
    """The checks every jobqd service passes."""
    need(svc, "a service named %s" % name)
    build = svc.get("build") or {}
    context = os.path.normpath(os.path.join(base, build.get("context", ".")))
    dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
    need(os.path.isfile(dockerfile), "%s: build: %s exists" % (name, dockerfile))
    need(os.path.isfile(os.path.join(context, ".dockerignore")),
         "%s: build: context has .dockerignore" % name)
    env = svc.get("environment") or {}
    need(isinstance(env, dict), "%s: environment: a mapping" % name)
    env = env if isinstance(env, dict) else {}
    secret_file(doc, svc, env.get("JOBQ_AUTH_TOKEN_FILE", ""),
                "%s: environment: JOBQ_AUTH_TOKEN_FILE" % name, need)
    need(svc.get("stop_signal") == "SIGTERM", "%s: stop_signal: SIGTERM" % name)
    need(bool(svc.get("stop_grace_period")), "%s: stop_grace_period is set" % name)
    need(svc.get("read_only") is not True or "/tmp" in (svc.get("tmpfs") or []),
         "%s: read_only needs a tmpfs on /tmp (JOBQ_AUTH_TOKEN writes its file there)" % name)
    return env


def check_sqlite(doc, base, need):
    svc = (doc.get("services") or {}).get("jobq") or {}
    check_jobqd(doc, base, "jobq", svc, need)
    volumes = svc.get("volumes") or []
    named = [v.split(":")[0] for v in volumes
             if isinstance(v, str) and v.endswith(":/var/lib/jobq")]
    need(len(named) == 1, "volumes: one NAME:/var/lib/jobq")
    need(named and named[0] in (doc.get("volumes") or {}), "volumes: the volume is declared")


def check_pg(doc, base, need):
    services = doc.get("services") or {}
    pg = services.get("postgres") or {}
    replicas = {n: s for n, s in services.items() if n != "postgres"}
    need(len(replicas) >= 2, "at least two jobqd replicas beside postgres")
    ports = []
    for name, svc in replicas.items():
        env = check_jobqd(doc, base, name, svc, need)
        url = str(env.get("JOBQ_DB", ""))
        u = urllib.parse.urlsplit(url)
        need(u.scheme in ("postgres", "postgresql"), "%s: JOBQ_DB is a PostgreSQL URL" % name)
        need(u.hostname == "postgres", "%s: JOBQ_DB names the postgres service" % name)
        need(u.password is None and "password=" not in u.query,
             "%s: no password in JOBQ_DB" % name)
        passfile = urllib.parse.parse_qs(u.query).get("passfile", [""])[0]
        secret_file(doc, svc, passfile, "%s: JOBQ_DB passfile" % name, need)
        need(not any(str(v).endswith(":/var/lib/jobq") for v in svc.get("volumes") or []),
             "%s: stateless (no volume at /var/lib/jobq)" % name)
        dep = (svc.get("depends_on") or {}).get("postgres") if isinstance(
            svc.get("depends_on"), dict) else None
        need((dep or {}).get("condition") == "service_healthy",
             "%s: depends_on postgres: condition service_healthy" % name)
        ports += [str(p).rsplit(":", 1)[0] for p in svc.get("ports") or []]
    need(len(ports) == len(set(ports)) == len(replicas), "each replica on a port of its own")
    need(pg, "a service named postgres")
    test = " ".join(str(t) for t in ((pg.get("healthcheck") or {}).get("test") or []))
    need("pg_isready" in test, "postgres: a pg_isready healthcheck")
    env = pg.get("environment") or {}
    secret_file(doc, pg, str(env.get("POSTGRES_PASSWORD_FILE", "")),
                "postgres: environment: POSTGRES_PASSWORD_FILE", need)
    named = [str(v).split(":")[0] for v in pg.get("volumes") or []
             if str(v).endswith(":/var/lib/postgresql/data")]
    need(len(named) == 1 and named[0] in (doc.get("volumes") or {}),
         "postgres: a declared named volume at /var/lib/postgresql/data")


def main(paths):
    failed = 0
    for path in paths:
        base = os.path.dirname(os.path.abspath(path))
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        errors = []

        def need(cond, what):
            if not cond:
                errors.append(what)

        if "postgres" in (doc.get("services") or {}):
            check_pg(doc, base, need)
        else:
            check_sqlite(doc, base, need)
        for e in errors:
            print("%s: failed: %s" % (os.path.basename(path), e))
        failed += len(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
