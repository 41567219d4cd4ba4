#!/usr/bin/env bash
# Starts a local PostgreSQL for the tests of @parley/store-sql (CI runs it; run it yourself before
# `npx vitest run packages/store-sql`). Needs root: installs Debian's `postgresql` when it is missing, starts the
# newest cluster on 127.0.0.1:5432 and creates the user and database of the default test URL
#   postgres://parley:parley@127.0.0.1:5432/parley_test   (override with PARLEY_TEST_PG_URL)
# Idempotent: a second run only checks that the server answers.
set -euo pipefail

if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
  echo "postgres.sh: installing PostgreSQL from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$version main"; then
  pg_createcluster "$version" main -- --auth-local=peer --auth-host=scram-sha-256 >/dev/null
fi

as_postgres() { runuser -u postgres -- "$@"; }
psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p 5432 "$@"; }

status="$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $4}')"
if [ "$status" != "online" ]; then
  pg_ctlcluster "$version" main start
fi

# Every test opens its own pool: leave room for many at once.
if [ "$(psql_admin -At -c 'SHOW max_connections')" -lt 300 ]; then
  psql_admin -c "ALTER SYSTEM SET max_connections = 300"
  pg_ctlcluster "$version" main restart
fi

if [ "$(psql_admin -At -c "SELECT count(*) FROM pg_roles WHERE rolname = 'parley'")" = "0" ]; then
  psql_admin -c "CREATE ROLE parley LOGIN PASSWORD 'parley'"
fi
if [ "$(psql_admin -At -c "SELECT count(*) FROM pg_database WHERE datname = 'parley_test'")" = "0" ]; then
  psql_admin -c "CREATE DATABASE parley_test OWNER parley"
fi

for _ in $(seq 1 50); do
  if PGPASSWORD=parley psql -X -q -h 127.0.0.1 -p 5432 -U parley -d parley_test -c "SELECT 1" >/dev/null 2>&1; then
    echo "postgres.sh: PostgreSQL $version is up on 127.0.0.1:5432 (database parley_test, user parley)"
    exit 0
  fi
  sleep 0.2
done
echo "postgres.sh: PostgreSQL did not answer on 127.0.0.1:5432" >&2
exit 1
