#!/usr/bin/env bash
# Scale-out on PostgreSQL: the API without workers, one worker, one turn through both.
#
#   examples/scale_out.sh
#
# The database is $TURNKEEPER_DATABASE_URL (default
# postgresql://postgres@127.0.0.1:5432/turnkeeper), created if it is missing.
# The model is the offline demo unless ANTHROPIC_API_KEY or OPENAI_BASE_URL is
# set. The API listens on $PORT (default 8000); both processes are stopped with
# SIGTERM at the end.
#
# Needs the server and postgres extras in the checkout's .venv
# (.venv/bin/pip install -e '.[server,postgres]'; $TURNKEEPER runs another
# turnkeeper), a PostgreSQL server, psql, createdb and curl.
set -euo pipefail

export TURNKEEPER_DATABASE_URL=${TURNKEEPER_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/turnkeeper}
PORT=${PORT:-8000}
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd)
TURNKEEPER=${TURNKEEPER:-$CHECKOUT/.venv/bin/turnkeeper}
PYTHON=${PYTHON:-$CHECKOUT/.venv/bin/python}
needs="the server and postgres extras: .venv/bin/pip install -e '.[server,postgres]' in $CHECKOUT"
if ! command -v ${TURNKEEPER%% *} >/dev/null \
    || ! "$PYTHON" -c "import uvicorn, psycopg, procrastinate" 2>/dev/null; then
    echo "scale_out.sh needs $needs" >&2
    exit 2
fi
BASE=http://127.0.0.1:$PORT

# 1. The database: one for the store and the job queue.
name=${TURNKEEPER_DATABASE_URL##*/}
name=${name%%\?*}
server=${TURNKEEPER_DATABASE_URL%/*}
if ! psql "$server/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    createdb --maintenance-db="$server/postgres" "$name"
fi

# 2. The API, queueing turns on procrastinate; 3. a worker running them.
$TURNKEEPER serve --no-worker --port "$PORT" &
api=$!
$TURNKEEPER worker &
worker=$!
trap 'kill -TERM $api $worker 2>/dev/null || true; wait' EXIT

until curl -sf "$BASE/openapi.json" >/dev/null; do
    kill -0 $api 2>/dev/null || exit 2  # the API exited: its error is above
    sleep 0.2
done

# 4. One turn, as a web page would ask it.
field() { "$PYTHON" -c "import json, sys; print(json.load(sys.stdin)$1)"; }
created=$(curl -sf -XPOST "$BASE/api/conversations")
conversation=$(field '["conversation_id"]' <<<"$created")
token=$(field '["token"]' <<<"$created")
turn=$(curl -sf -XPOST "$BASE/api/conversations/$conversation/turns" \
    -H "authorization: Bearer $token" -H "content-type: application/json" -d '{"text": "what'"'"'s on my todo list?"}' | field '["turn_id"]')
until [ "$(curl -sf "$BASE/api/turns/$turn" -H "authorization: Bearer $token" | field '["done"]')" = True ]; do
    sleep 0.2
done
curl -sf "$BASE/api/turns/$turn" -H "authorization: Bearer $token" \
    | field '["messages"][-1].get("text") or "(no answer)"'
