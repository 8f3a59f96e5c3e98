#!/usr/bin/env bash
# Fuzz the REST API against its own OpenAPI schema with schemathesis (a venv of its own in
# /tmp, so the project's stays as it is): a fresh single-machine install on a free port, an
# admin's token, every operation. Server errors, undocumented statuses and bodies that
# differ from the schema are failures; what is left are business rules the schema cannot
# say, answered 422 with a sentence (schemathesis's ST202, "schema-valid request rejected"):
# an archive's name must end in .zip or .tar.gz, code must be UTF-8 text, a GPU type must be
# one the problem is offered on.
#   bash scripts/fuzz-api.sh [EXAMPLES]   # default: 100 per operation
# On PostgreSQL (which refuses NUL characters that SQLite takes):
#   KJ_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/DB bash scripts/fuzz-api.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz=/tmp/kj-schemathesis
[ -x "$fuzz/bin/schemathesis" ] || { python3 -m venv "$fuzz" && "$fuzz/bin/pip" install -q schemathesis; }
data=$(mktemp -d /tmp/kj-fuzz-XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(KJ_DATA_DIR=$data .venv/bin/python -m server.cli user add fuzzer --admin | tail -1)
KJ_DATA_DIR=$data setsid .venv/bin/python -m server.cli serve --port "$port" >"$data/serve.log" 2>&1 &
serve=$!
trap 'kill -- -$serve 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.3; done
cd "$data"  # schemathesis keeps its example database where it runs
"$fuzz/bin/schemathesis" run "http://127.0.0.1:$port/openapi.json" --checks all \
  -H "Authorization: Bearer $token" -n "${1:-100}" --generation-allow-x00 true
