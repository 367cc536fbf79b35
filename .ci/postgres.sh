# Sourced by .ci/run: make sure a PostgreSQL answers, and export PG_URL. Uses the machine's server at
# 127.0.0.1:5432 when it answers; otherwise installs PostgreSQL from Debian and starts a throwaway
# cluster on port 55432 as the postgres user (initdb refuses root). Never skips: no server, no pass.
ensure_postgres() {
  if command -v pg_isready >/dev/null 2>&1 && pg_isready -h 127.0.0.1 -p 5432 -q; then
    PG_URL="postgres://postgres@127.0.0.1:5432/postgres"
  else
    echo "no PostgreSQL at 127.0.0.1:5432: starting a throwaway cluster"
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    local bin; bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
    local dir; dir=$(mktemp -d /tmp/everdict-pg.XXXXXX)
    chown postgres "$dir"
    runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-p 55432 -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    PG_URL="postgres://postgres@127.0.0.1:55432/postgres"
  fi
  psql "$PG_URL" -Atc 'select version()' >/dev/null || { echo "PostgreSQL at $PG_URL does not answer" >&2; exit 1; }
  export PG_URL
  echo "PostgreSQL: $PG_URL"
}
