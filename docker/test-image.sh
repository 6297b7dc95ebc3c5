#!/usr/bin/env bash
# Build docker/Dockerfile with podman, unchanged, and test the image it makes:
#   bash docker/test-image.sh
#
# No Docker engine or registry is needed: the base image debian:bookworm-slim is made here with
# debootstrap from the Debian mirror apt already uses, slimmed the way the official image is,
# and imported into a podman storage of this script's own. Both are cached in $JOBQ_PODMAN_DIR
# (default /var/tmp/jobq-podman), so only the first run pays for debootstrap.
#
# The test runs the image on a free port with --network host and, talking to it with curl:
# reads the admin token that the first start creates and prints; checks that a request without
# it gets 401, and that enqueue, claim and complete work with it; runs the HEALTHCHECK; checks
# that jobqd is PID 1 and not root; stops the container (SIGTERM) and checks it exits 0 within
# a few seconds; starts a new container on the same volume and finds the job and the token
# still there (and the token not printed again); then a mounted JOBQ_AUTH_TOKEN_FILE (with a
# read-only root and no capabilities, as docker/compose.yaml runs it), a podman secret, a token
# file the image's user cannot read, JOBQ_AUTH_TOKEN and JOBQ_INSECURE_LISTEN_ANY=1; then
# docker/compose.pg.yaml's setup: `jobqd migrate` in the image copies the SQLite volume
# (mounted read-only) into PostgreSQL, and two replicas of the image share that database (a
# job migrated, a job enqueued on one and claimed from a long poll parked on the other, and
# a second migrate refused); checks docker/compose.yaml and docker/compose.pg.yaml statically
# (tests/docker/check_compose.py); and the image's size (at most $JOBQ_IMAGE_MAX_MB, default
# 120). Compose itself cannot run here (no Docker engine, no registry for the postgres
# image): the containers run as the compose files run them, and compose.pg.yaml's PostgreSQL
# service is a throwaway cluster on this host (scripts/pg_cluster.sh) with a password login.
#
# Needs root, curl, and podman, runc and debootstrap (installed with apt-get when missing),
# and PostgreSQL's server (scripts/deps.sh installs it).
# JOBQ_IMAGE_UNIT_TESTS=0 (ctest's docker.image sets it) builds the image without building or
# running the unit tests in it, on a Debian bookworm host (see build() below).
# When podman cannot be installed or cannot run here, prints "skipped: podman not available"
# and exits 0, unless JOBQ_REQUIRE_PODMAN=1 (then exits 1). Ends with "N passed, N failed";
# exits non-zero when a check failed.
set -euo pipefail

repo=$(cd -P "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${JOBQ_PODMAN_DIR:-/var/tmp/jobq-podman}
image=${JOBQ_IMAGE:-localhost/jobq:test}
base=docker.io/library/debian:bookworm-slim
max_mb=${JOBQ_IMAGE_MAX_MB:-120}
t_start=$SECONDS

note() { printf '== %s\n' "$*"; }

skip() {
    if [ "${JOBQ_REQUIRE_PODMAN:-0}" = 1 ]; then
        echo "podman not available ($1), and JOBQ_REQUIRE_PODMAN=1"
        exit 1
    fi
    echo "skipped: podman not available ($1)"
    exit 0
}

# --- tools -------------------------------------------------------------------------------
need=()
for tool in podman runc debootstrap curl; do
    command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        skip "missing ${need[*]}; installing them needs root and apt-get"
    fi
    note "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q "${need[@]}" >/dev/null 2>&1; then
        apt-get update -q >/dev/null 2>&1 || true
        apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
            skip "apt-get install ${need[*]} failed"
    fi
fi
[ "$(id -u)" = 0 ] || skip "this test runs podman as root"
# PyYAML for the static checks of docker/compose.yaml (best effort: skipped without it).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import yaml' 2>/dev/null; then
    apt-get install -y -q python3-yaml >/dev/null 2>&1 || true
fi

# --- podman's configuration: our own storage, runc, the hard limits we are allowed ---------
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9 # one run at a time per cache directory
hard_nofile=$(ulimit -Hn)
cat >"$cache/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$hard_nofile:$hard_nofile", "nproc=4096:4096"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$cache/tmp"
EOF
cat >"$cache/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
EOF
cat >"$cache/registries.conf" <<EOF
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"

[aliases]
"debian" = "docker.io/library/debian"
EOF
export CONTAINERS_CONF=$cache/containers.conf
export CONTAINERS_STORAGE_CONF=$cache/storage.conf
export CONTAINERS_REGISTRIES_CONF=$cache/registries.conf

# podman keeps its run-time state (runroot, tmp_dir) where a reboot would normally wipe it;
# here it lives in the cache, so wipe it ourselves after a reboot.
boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
if [ "$(cat "$cache/boot_id" 2>/dev/null)" != "$boot_id" ]; then
    rm -rf "${cache:?}/run" "${cache:?}/tmp"
    echo "$boot_id" >"$cache/boot_id"
fi

podman info >"$cache/info.log" 2>&1 || skip "podman info failed: see $cache/info.log"

# Containers and volumes a killed earlier run left behind.
{
    podman ps -aq --filter name='^jobq-test-' | xargs -r podman rm -f
    podman volume ls -q --filter name='^jobq-test-' | xargs -r podman volume rm -f
} >/dev/null 2>&1 || true
podman secret ls --format '{{.Name}}' 2>/dev/null | grep '^jobq-test-' |
    xargs -r podman secret rm >/dev/null 2>&1 || true

# --- the base image ----------------------------------------------------------------------
# The first URI of the host's Debian sources is the mirror; the image gets the host's sources
# file, so apt-get inside the build reaches the same mirror (and security archive).
debian_mirror() {
    local uri=""
    if [ -n "${JOBQ_DEBIAN_MIRROR:-}" ]; then
        uri=$JOBQ_DEBIAN_MIRROR
    elif [ -f /etc/apt/sources.list.d/debian.sources ]; then
        uri=$(awk '$1 == "URIs:" && $2 ~ /\/debian\/?$/ { print $2; exit }' \
            /etc/apt/sources.list.d/debian.sources)
    elif [ -f /etc/apt/sources.list ]; then
        uri=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

make_base() {
    local root=$cache/rootfs mirror
    mirror=$(debian_mirror)
    rm -rf "$root"
    note "debootstrap --variant=minbase bookworm from $mirror (once; cached in $cache)"
    if ! debootstrap --variant=minbase bookworm "$root" "$mirror" \
            >"$cache/debootstrap.log" 2>&1; then
        tail -20 "$cache/debootstrap.log"
        echo "debootstrap failed: see $cache/debootstrap.log"
        exit 1
    fi
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        grep -v '^#' /etc/apt/sources.list.d/debian.sources \
            >"$root/etc/apt/sources.list.d/debian.sources"
        rm -f "$root/etc/apt/sources.list"
    fi
    # What the official slim image does: no docs, man pages or locales, no apt caches.
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "${root:?}"/usr/share/{man,groff,info,lintian,linda,locale}/* \
        "${root:?}"/var/cache/apt/*.bin "${root:?}"/var/cache/apt/archives/*.deb \
        "${root:?}"/var/lib/apt/lists/* "${root:?}"/var/log/* \
        "${root:?}"/dev/* "${root:?}"/proc/* "${root:?}"/sys/*
    mkdir -p "$root/var/lib/apt/lists/partial"
    tar --numeric-owner -C "$root" -c . |
        podman import --quiet --change 'CMD ["bash"]' - "$base" >/dev/null
    rm -rf "$root"
}

t0=$SECONDS
if ! podman image exists "$base"; then
    make_base
fi
t_base=$((SECONDS - t0))

# --- build -------------------------------------------------------------------------------
note "podman build -f docker/Dockerfile -t $image (build log: $cache/build.log)"
# The build stage is tagged too (a first build up to it; the second reuses its layers), so
# that pruning what earlier builds left dangling keeps both stages' layer caches.
# JOBQ_IMAGE_UNIT_TESTS=0 (ctest's docker.image sets it: the same ctest run has the unit
# tests) builds the image's programs without the unit tests (the Dockerfile's JOBQ_UNIT_TESTS),
# when this host is the image's Debian release (bookworm): the same compiler and libraries.
# Elsewhere, or by default, the build stage builds and runs them as `docker build` does.
unit_tests=1
if [ "${JOBQ_IMAGE_UNIT_TESTS:-1}" = 0 ] &&
    grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
    unit_tests=0
    note "the unit tests are not built in the image: this host's ctest run has them"
fi
build() { # [podman build options...]
    podman build --format docker --network host --pull=never --force-rm \
        --build-arg JOBQ_UNIT_TESTS="$unit_tests" \
        -f "$repo/docker/Dockerfile" "$@" "$repo" >>"$cache/build.log" 2>&1
}
t0=$SECONDS
: >"$cache/build.log"
if ! build --target build -t "$image-build" || ! build -t "$image"; then
    podman image prune -f >/dev/null 2>&1 || true
    tail -40 "$cache/build.log"
    echo "podman build failed: see $cache/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi
t_build=$((SECONDS - t0))
podman image prune -f >/dev/null 2>&1 || true

# --- run ---------------------------------------------------------------------------------
work=$(mktemp -d)
tag=jobq-test-$$
vol=$tag-data
containers=()
secrets=()
pg_dir=""
cleanup() {
    local c
    for c in "${containers[@]}"; do
        podman rm -f -v "$c" >/dev/null 2>&1 || true
    done
    for c in "${secrets[@]}"; do
        podman secret rm "$c" >/dev/null 2>&1 || true
    done
    podman volume rm -f "$vol" >/dev/null 2>&1 || true
    if [ -n "$pg_dir" ]; then
        bash "$repo/scripts/pg_cluster.sh" stop "$pg_dir" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
check() { # NAME COMMAND...: one check, counted
    local name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
    fi
}

free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 30000))
    fi
}
port=$(free_port)
url=http://127.0.0.1:$port

# at_port PORT COMMAND...: run one of the helpers below against a jobqd on PORT, not $port.
at_port() {
    local port=$1 url=http://127.0.0.1:$1
    shift
    "$@"
}

# start NAME [podman run options...]: run the image detached on $port and the test volume.
start() {
    local name=$tag-$1
    shift
    containers+=("$name")
    # podman complains on stderr that it has no systemd to time the HEALTHCHECK with; the
    # test runs the HEALTHCHECK itself (podman healthcheck run). Show stderr only on failure.
    if ! podman run -d --name "$name" --network host --pull=never \
            -e JOBQ_LISTEN="0.0.0.0:$port" "$@" "$image" >/dev/null 2>"$work/podman.err"; then
        cat "$work/podman.err"
        return 1
    fi
}

# stop NAME: podman stop (SIGTERM, then SIGKILL after 30 s).
stop() {
    if ! podman stop -t 30 "$tag-$1" >/dev/null 2>"$work/podman.err"; then
        cat "$work/podman.err"
        return 1
    fi
}

# wait_healthy NAME: until GET /healthz answers 200 (60 s at most). Prints the log on failure.
wait_healthy() {
    local i
    for ((i = 0; i < 600; i++)); do
        if curl -fsS -m 2 -o /dev/null "$url/healthz" 2>/dev/null; then
            return 0
        fi
        if [ "$(podman inspect --format '{{.State.Running}}' "$tag-$1")" != true ]; then
            break
        fi
        sleep 0.1
    done
    echo "container $tag-$1 did not become healthy; its log:"
    podman logs "$tag-$1" 2>&1 | tail -30
    return 1
}

# wait_exited NAME: until the container has stopped (60 s at most).
wait_exited() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ "$(podman inspect --format '{{.State.Running}}' "$tag-$1")" = false ] && return 0
        sleep 0.1
    done
    return 1
}

# api TOKEN METHOD PATH [JSON]: prints the status code; the body is in $work/body.
api() {
    local auth=() data=()
    [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
    [ $# -ge 4 ] && data=(-H 'Content-Type: application/json' -d "$4")
    curl -sS -m 10 -o "$work/body" -w '%{http_code}' -X "$2" "${auth[@]}" "${data[@]}" "$url$3"
}
body_has() { grep -q -- "$1" "$work/body"; }
json_str() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$work/body"; }
json_num() { sed -n "s/.*\"$1\":\\([0-9][0-9]*\\).*/\\1/p" "$work/body"; }
logs_of() { podman logs "$tag-$1" 2>&1; }
# (grep reads all of its input: grep -q could end a pipe early, and pipefail would see SIGPIPE.)
log_has() { logs_of "$1" | grep -c -- "$2" >/dev/null; }
log_lacks() { ! log_has "$@"; }
image_field() { podman image inspect --format "{{$1}}" "$image"; }
is_base64url_43() { [[ $1 =~ ^[A-Za-z0-9_-]{43}$ ]]; }
claimed() { [ -n "$lease" ] && body_has "\"id\":$job,"; }
has_healthcheck() { [[ $(image_field .Config.Healthcheck) == *healthcheck* ]]; }
stops_on_sigterm() { [[ $(image_field .Config.StopSignal) =~ ^(SIGTERM|15)$ ]]; }
uid_not_root() {
    local u
    u=$(podman exec "$tag-$1" id -u) && [ -n "$u" ] && [ "$u" != 0 ]
}
env_lacks() {
    local environ
    environ=$(podman exec "$tag-$1" cat /proc/1/environ | tr '\0' '\n') && [ -n "$environ" ] &&
        ! grep -q "^$2=" <<<"$environ"
}
exit_code() { podman inspect --format '{{.State.ExitCode}}' "$tag-$1"; }

t0=$SECONDS
note "first start: the image's defaults, an empty volume"
start one -v "$vol:/var/lib/jobq"
check "first start: /healthz answers" wait_healthy one
token=$(logs_of one | sed -n 's/.*admin token: \([A-Za-z0-9_-]*\).*/\1/p' | head -1)
check "first start: an admin token is printed in the log" test -n "$token"
check "first start: the token is 43 base64url characters" is_base64url_43 "$token"
check "no token: 401" test "$(api "" GET /queues)" = 401
check "a wrong token: 401" test "$(api wrong-token-0123456789 GET /queues)" = 401
check "enqueue: 201" test "$(api "$token" POST /jobs '{"queue":"ship","payload":{"n":1}}')" = 201
job=$(json_num id)
check "enqueue: a job id" test -n "$job"
check "claim: 200" test "$(api "$token" POST /claim '{"worker_id":"w1","queue":"ship"}')" = 200
lease=$(json_str lease_token)
check "claim: the job and a lease token" claimed
check "complete: 200" test "$(api "$token" POST "/jobs/$job/complete" \
    "{\"lease_token\":\"$lease\",\"result\":{\"ok\":true}}")" = 200
check "complete: succeeded" body_has '"status":"succeeded"'
check "HEALTHCHECK (podman healthcheck run)" podman healthcheck run "$tag-one"
check "HEALTHCHECK is in the image" has_healthcheck
check "the user is not root (exec id -u)" uid_not_root one
check "the image's user is 10001:10001" test "$(image_field .Config.User)" = 10001:10001
check "jobqd is PID 1 (the entrypoint exec'd it)" \
    test "$(podman exec "$tag-one" cat /proc/1/comm)" = jobqd
check "the kept token file is mode 600, owned by jobq" \
    test "$(podman exec "$tag-one" stat -c '%a %u' /var/lib/jobq/auth-tokens)" = "600 10001"
check "STOPSIGNAL is SIGTERM" stops_on_sigterm

note "podman stop (SIGTERM; SIGKILL only after 30 s)"
t_stop0=$(date +%s%N)
stop one
stop_ms=$((($(date +%s%N) - t_stop0) / 1000000))
echo "     stopped in $stop_ms ms"
check "stop: exit code 0" test "$(exit_code one)" = 0
check "stop: within 10 s" test "$stop_ms" -lt 10000
check "stop: jobqd logged SIGTERM" log_has one SIGTERM

note "second start on the same volume"
start two -v "$vol:/var/lib/jobq"
check "second start: /healthz answers" wait_healthy two
check "second start: the job is still there" test "$(api "$token" GET "/jobs/$job")" = 200
check "second start: still succeeded" body_has '"status":"succeeded"'
check "second start: the kept token still works" test "$(api "$token" GET /queues)" = 200
check "second start: the token is not printed again" log_lacks two "admin token:"
stop two
check "second stop: exit code 0" test "$(exit_code two)" = 0

note "JOBQ_AUTH_TOKEN_FILE: a mounted token file wins over the kept one"
printf 'producer-token-0123456789 producer\nadmin-token-0123456789abc admin\n' >"$work/tokens"
chown 10001:10001 "$work/tokens"
chmod 600 "$work/tokens"
# As docker/compose.yaml runs it: a bind-mounted secret, read-only root, no capabilities.
hardened=(--read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges)
start three "${hardened[@]}" -v "$vol:/var/lib/jobq" \
    -v "$work/tokens:/run/secrets/jobq-tokens:ro" -e JOBQ_AUTH_TOKEN_FILE=/run/secrets/jobq-tokens
check "token file: /healthz answers" wait_healthy three
check "token file: the producer token enqueues" \
    test "$(api producer-token-0123456789 POST /jobs '{"queue":"ship","payload":2}')" = 201
check "token file: the admin token reads" \
    test "$(api admin-token-0123456789abc GET "/jobs/$job")" = 200
check "token file: the kept token is not used" test "$(api "$token" GET /queues)" = 401
stop three
check "token file: exit code 0" test "$(exit_code three)" = 0

note "a podman secret with uid and mode (the podman recipe in README.md)"
secret=$tag-tokens
printf 'secret-token-0123456789ab admin\n' | podman secret create "$secret" - >/dev/null
secrets+=("$secret")
# (Not --read-only: podman then cannot make the secret's mount point under /run.)
start six --cap-drop ALL --security-opt no-new-privileges \
    --secret "$secret,target=/run/secrets/jobq-tokens,uid=10001,mode=0400" \
    -e JOBQ_AUTH_TOKEN_FILE=/run/secrets/jobq-tokens
check "podman secret: /healthz answers" wait_healthy six
check "podman secret: the token works" test "$(api secret-token-0123456789ab GET /queues)" = 200
check "podman secret: mode 0400, no warning about the mode" log_lacks six "other users"
stop six

note "a token file the image's user cannot read: no start, and a hint"
printf 'root-token-0123456789abcd admin\n' >"$work/root-tokens"
chmod 600 "$work/root-tokens"
start seven -v "$work/root-tokens:/run/secrets/jobq-tokens:ro" \
    -e JOBQ_AUTH_TOKEN_FILE=/run/secrets/jobq-tokens
check "unreadable token file: the container exits" wait_exited seven
check "unreadable token file: exit code not 0" test "$(exit_code seven)" != 0
check "unreadable token file: the log says why" log_has seven "not readable by uid 10001"

note "JOBQ_AUTH_TOKEN: one admin token from the environment"
start four "${hardened[@]}" -e JOBQ_AUTH_TOKEN=env-token-0123456789abcdef
check "env token: /healthz answers" wait_healthy four
check "env token: it works" test "$(api env-token-0123456789abcdef GET /queues)" = 200
check "env token: no token is 401" test "$(api "" GET /queues)" = 401
check "env token: nothing created in the volume" \
    podman exec "$tag-four" test ! -e /var/lib/jobq/auth-tokens
check "env token: not in jobqd's environment" env_lacks four JOBQ_AUTH_TOKEN
stop four

note "JOBQ_INSECURE_LISTEN_ANY=1: no token at all"
start five -e JOBQ_INSECURE_LISTEN_ANY=1
check "insecure: /healthz answers" wait_healthy five
check "insecure: no token needed" test "$(api "" GET /queues)" = 200
check "insecure: no token file created" podman exec "$tag-five" test ! -e /var/lib/jobq/auth-tokens
stop five
check "insecure: exit code 0" test "$(exit_code five)" = 0

# --- docker/compose.pg.yaml: migrate, then two replicas on one PostgreSQL ----------------
# migrate_image NAME [podman run options...]: `jobqd migrate` in the image, from the test
# volume (read-only) into $pg_url. Its output is in $work/migrate.out; returns its status.
migrate_image() {
    local name=$tag-$1
    shift
    containers+=("$name")
    podman run --rm --name "$name" --network host --pull=never -v "$vol:/var/lib/jobq:ro" \
        "${pgpass[@]}" -e JOBQ_DB="$pg_url" "$@" "$image" \
        migrate --from /var/lib/jobq/jobq.db >"$work/migrate.out" 2>&1
}
migrate_says() { grep -c -- "$1" "$work/migrate.out" >/dev/null; }
# parked PORT: a long poll is parked on the jobqd at PORT (its metrics say so).
parked() {
    curl -sS -m 5 -H "Authorization: Bearer $admin" "http://127.0.0.1:$1/metrics" 2>/dev/null |
        grep -c '^jobq_waiting_claims 1$' >/dev/null
}
wait_parked() {
    local i
    for ((i = 0; i < 100; i++)); do
        parked "$1" && return 0
        sleep 0.1
    done
    return 1
}
poll_got() { grep -c -- "\"id\":$1," "$work/poll" >/dev/null; }

note "docker/compose.pg.yaml: migrate the volume into PostgreSQL, then two replicas on it"
pg_dir=$(mktemp -u /tmp/jobq-image-pg.XXXXXX)
pg_ok=0
if bash "$repo/scripts/pg_cluster.sh" start "$pg_dir" >"$work/pg.log" 2>&1; then
    pg_ok=1
else
    tail -5 "$work/pg.log"
fi
check "postgresql: a throwaway cluster starts (scripts/pg_cluster.sh)" test "$pg_ok" = 1
if [ "$pg_ok" = 1 ]; then
    pg_port=$(sed -n 's/^export JOBQ_TEST_PG_PORT=//p' "$pg_dir/env")
    pg_bin=$(sed -n 's/^export JOBQ_TEST_PG_BIN=//p' "$pg_dir/env")
    pg_pw=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
    # The role jobq_image logs in with its password (scram) over TCP, as the replicas of
    # compose.pg.yaml do, from a libpq password file mounted as its secret.
    hba=$pg_dir/data/pg_hba.conf
    { echo "host jobq_image jobq_image 127.0.0.1/32 scram-sha-256"; cat "$hba"; } >"$work/hba"
    cat "$work/hba" >"$hba" # (keeps the file's owner)
    "$pg_bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$pg_dir" -p "$pg_port" -U jobq -d postgres \
        -c "CREATE ROLE jobq_image LOGIN PASSWORD '$pg_pw'" \
        -c "CREATE DATABASE jobq_image OWNER jobq_image" -c "SELECT pg_reload_conf()" >/dev/null
    printf '127.0.0.1:%s:jobq_image:jobq_image:%s\n' "$pg_port" "$pg_pw" >"$work/pgpass"
    chown 10001:10001 "$work/pgpass"
    chmod 600 "$work/pgpass"
    pgpass=(-v "$work/pgpass:/run/secrets/jobq-pgpass:ro")
    pg_url="postgresql://jobq_image@127.0.0.1:$pg_port/jobq_image"
    pg_url+="?passfile=/run/secrets/jobq-pgpass&connect_timeout=5"
    admin=admin-token-0123456789abc

    migrate_image migrate && migrated=0 || migrated=$?
    sed 's/^/     /' "$work/migrate.out" | tail -2
    check "migrate: exit code 0" test "$migrated" = 0
    check "migrate: the volume's jobs copied" migrate_says "copied [1-9][0-9]* jobs"
    check "migrate: the password is not shown" test "$(grep -c -- "$pg_pw" "$work/migrate.out")" = 0

    port2=$(free_port)
    replica=("${hardened[@]}" -v "$work/tokens:/run/secrets/jobq-tokens:ro" "${pgpass[@]}"
        -e JOBQ_AUTH_TOKEN_FILE=/run/secrets/jobq-tokens -e JOBQ_DB="$pg_url")
    start pg1 "${replica[@]}"
    at_port "$port2" start pg2 "${replica[@]}"
    check "replica 1: /healthz answers" wait_healthy pg1
    check "replica 2: /healthz answers" at_port "$port2" wait_healthy pg2
    check "replica 2: the migrated job is there" \
        test "$(at_port "$port2" api "$admin" GET "/jobs/$job")" = 200
    check "replica 2: still succeeded, its result kept" body_has '"result":{"ok":true}'
    check "replicas: both ready (GET /readyz)" test "$(api "$admin" GET /readyz)" = 200 -a \
        "$(at_port "$port2" api "$admin" GET /readyz)" = 200
    # A long poll parked on replica 2 is woken by an enqueue on replica 1 (LISTEN/NOTIFY).
    curl -sS -m 30 -o "$work/poll" -H "Authorization: Bearer $admin" \
        -H 'Content-Type: application/json' \
        -d '{"worker_id":"w2","queue":"pg","wait_seconds":20}' \
        "http://127.0.0.1:$port2/claim" 2>/dev/null &
    poll=$!
    check "replica 2: a long poll parks" wait_parked "$port2"
    t_poll=$(date +%s%N)
    check "replica 1: enqueue: 201" test "$(api "$admin" POST /jobs '{"queue":"pg","payload":3}')" = 201
    pg_job=$(json_num id)
    wait "$poll" || true
    poll_ms=$((($(date +%s%N) - t_poll) / 1000000))
    echo "     the long poll on replica 2 answered after $poll_ms ms"
    check "replica 2: the long poll got the job from replica 1" poll_got "$pg_job"
    check "replica 2: within 5 s" test "$poll_ms" -lt 5000
    check "new ids continue after the migrated ones" test "$pg_job" -gt "$job"
    cp "$work/poll" "$work/body"
    lease=$(json_str lease_token)
    check "replica 1: complete the job claimed on replica 2" test "$(api "$admin" POST \
        "/jobs/$pg_job/complete" "{\"lease_token\":\"$lease\"}")" = 200
    stop pg1
    at_port "$port2" stop pg2
    check "replicas: exit code 0" test "$(exit_code pg1)$(exit_code pg2)" = 00
    migrate_image migrate-again && migrated=0 || migrated=$?
    check "migrate again: refused (exit code 1)" test "$migrated" = 1
    check "migrate again: the target already holds jobs" migrate_says "already holds"
fi
t_run=$((SECONDS - t0))

note "docker/compose.yaml and compose.pg.yaml (static checks: no Docker here to run them)"
if python3 -c 'import yaml' 2>/dev/null; then
    check "compose.yaml: parses, builds docker/Dockerfile, volume, secret, SIGTERM" \
        python3 "$repo/tests/docker/check_compose.py" "$repo/docker/compose.yaml"
    check "compose.pg.yaml: two stateless replicas, postgres healthy first, passfile secret" \
        python3 "$repo/tests/docker/check_compose.py" "$repo/docker/compose.pg.yaml"
else
    echo "     not checked: python3 with PyYAML (python3-yaml) is missing"
fi

size=$(podman image inspect --format '{{.Size}}' "$image")
size_mb=$(((size + 500000) / 1000000))
echo "     image $image: $size bytes (${size_mb} MB)"
check "image size at most $max_mb MB" test "$size" -le $((max_mb * 1000000))

echo "times: base image ${t_base}s, build ${t_build}s, containers ${t_run}s," \
    "total $((SECONDS - t_start))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
