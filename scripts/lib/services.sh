# Throwaway PostgreSQL and moto S3 servers for scripts/cluster, scripts/bench-api and
# scripts/bench-jobs (sourced, not run). The caller calls `svc_stop` from its exit trap.
#
#   svc_postgres DIR      initdb in DIR/postgres/data (as the `postgres` user when root), start
#                         on a free loopback port, create database `adforge`; sets
#                         SVC_DATABASE_URL. Log: DIR/postgres.log. PG_BIN overrides
#                         /usr/lib/postgresql/15/bin; PG_SERVER_OPTIONS adds server options
#                         (e.g. `-c synchronous_commit=off`).
#   svc_createdb NAME     another database on that server; prints its URL.
#   svc_moto DIR BUCKET   moto_server (.venv/bin/moto_server, or ADFORGE_MOTO_SERVER; moto[server]
#                         ==5.2.5 is installed into .venv when missing, as scripts/test does) on a
#                         free loopback port with BUCKET created; sets SVC_S3_ENDPOINT and exports
#                         test AWS_* credentials unless set. Log: DIR/moto.log.
#   svc_stop              stops what the two started.
# Run from the repository root.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
SVC_PG_DATA=""
SVC_MOTO_PID=""
SVC_AS_PG=()
[ "$(id -u)" -ne 0 ] || SVC_AS_PG=(runuser -u postgres --)

svc_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

svc_postgres() {
  local dir=$1 port
  [ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL is missing at $PG_BIN (Debian: apt-get install postgresql)" >&2; return 1; }
  port=$(svc_free_port)
  mkdir -p "$dir/postgres"
  touch "$dir/postgres.log"
  if [ "$(id -u)" -eq 0 ]; then
    # PostgreSQL refuses to run as root: its folders belong to `postgres`, who must be able
    # to reach them.
    chmod 755 "$dir"
    chown postgres: "$dir/postgres" "$dir/postgres.log"
    runuser -u postgres -- test -x "$dir/postgres" ||
      { echo "the postgres user cannot reach $dir (a parent folder is closed to it)" >&2; return 1; }
  fi
  "${SVC_AS_PG[@]}" "$PG_BIN/initdb" -D "$dir/postgres/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { echo "initdb failed: $dir/initdb.log" >&2; return 1; }
  "${SVC_AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$dir/postgres/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $dir/postgres -c max_connections=200 ${PG_SERVER_OPTIONS:-}" \
    start >/dev/null || { echo "PostgreSQL did not start: $dir/postgres.log" >&2; return 1; }
  SVC_PG_DATA=$dir/postgres/data
  "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres adforge ||
    { echo "createdb failed: $dir/postgres.log" >&2; return 1; }
  SVC_DATABASE_URL=postgres://postgres@127.0.0.1:$port/adforge
}

svc_createdb() {
  local url=${SVC_DATABASE_URL%/*}
  "$PG_BIN/createdb" -h 127.0.0.1 -p "${url##*:}" -U postgres "$1" && echo "$url/$1"
}

svc_moto() {
  local dir=$1 bucket=$2 port bin=${ADFORGE_MOTO_SERVER:-.venv/bin/moto_server}
  if [ ! -x "$bin" ]; then
    [ -z "${ADFORGE_MOTO_SERVER:-}" ] || { echo "ADFORGE_MOTO_SERVER=$bin is not executable" >&2; return 1; }
    echo "installing moto[server]==5.2.5 into .venv (as scripts/test does)" >&2
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check "moto[server]==5.2.5"
  fi
  port=$(svc_free_port)
  "$bin" -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
  SVC_MOTO_PID=$!
  SVC_S3_ENDPOINT=http://127.0.0.1:$port
  local _
  for _ in $(seq 300); do curl -fs "$SVC_S3_ENDPOINT/" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fs -X PUT "$SVC_S3_ENDPOINT/$bucket" >/dev/null ||
    { echo "moto_server did not come up or refused the bucket: $dir/moto.log" >&2; return 1; }
  export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-testing}
  export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-testing}
  export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1}
}

svc_stop() {
  if [ -n "$SVC_MOTO_PID" ]; then
    kill "$SVC_MOTO_PID" 2>/dev/null || true
    wait "$SVC_MOTO_PID" 2>/dev/null || true
    SVC_MOTO_PID=""
  fi
  if [ -n "$SVC_PG_DATA" ]; then
    "${SVC_AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
    SVC_PG_DATA=""
  fi
}
