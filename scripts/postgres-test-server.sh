#!/usr/bin/env bash
# Starts (once) a throwaway PostgreSQL server for the test suites and prints its URL. The
# control-plane suites run a second time against it (SVC_TEST_POSTGRES_URL), each test on a
# fresh database copied from a migrated template. Durability is switched off: it is test data.
#   bash scripts/postgres-test-server.sh          start if needed, print the URL
#   bash scripts/postgres-test-server.sh stop     stop it
#   bash scripts/postgres-test-server.sh status   exit 0 when it is running
#   bash scripts/postgres-test-server.sh clean    drop the databases the tests made (svc_*)
set -euo pipefail

PORT=${SVC_TEST_PG_PORT:-54329}
DIR=${SVC_TEST_PG_DIR:-/var/tmp/svc-test-postgres}
BIN=${SVC_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
URL="postgres://postgres@127.0.0.1:$PORT/postgres"
[ -x "$BIN/pg_ctl" ] || { echo "postgres-test-server: no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 1; }

# The server refuses to run as root: as root, run it as the postgres user the package creates.
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if [ "${1:-}" = status ]; then exec "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; fi
if [ "${1:-}" = clean ]; then
  # Every test store is a database of its own (~24 MB on disk) that the tests leave behind, and
  # the server's directory outlives a run: this machine had 5,275 of them (47 GB) after a few days.
  # Templates go too (the next run rebuilds its own in a second); a database still in use (another
  # run's) is refused by the server and kept.
  "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" || exit 0
  "$BIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres >/dev/null 2>&1 <<'SQL' || true
SELECT format('DROP DATABASE IF EXISTS %I', datname) FROM pg_database WHERE datname LIKE 'svc\_%' \gexec
SQL
  exit 0
fi
if [ "${1:-}" = stop ]; then
  [ -f "$DIR/data/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null
  exit 0
fi

if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then echo "$URL"; exit 0; fi
mkdir -p "$DIR"
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
if [ ! -f "$DIR/data/PG_VERSION" ]; then
  as_owner "$BIN/initdb" -D "$DIR/data" -A trust -U postgres --no-sync >"$DIR/initdb.log" 2>&1 ||
    { cat "$DIR/initdb.log" >&2; exit 1; }
fi
as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start \
  -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null ||
  { tail -n 20 "$DIR/server.log" >&2; exit 1; }
echo "$URL"
