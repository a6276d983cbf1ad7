#!/usr/bin/env bash
# make bench: the scheduler pass benchmark, simulator replay times, an idle
# agent's CPU and memory (bench/agent.sh), GET /metrics under a 10,000-job
# queue (bench/metrics.py), the dashboard's API calls under a 10k-job queue
# (bench/dashboard.py), event listings (bench/events.py), the end-to-end row
# (bench/e2e.py: 1,000 jobs on 16 agents), the CLI per call (bench/cli.sh) and the API submit
# rate over loopback (wrk, 1 and 8 connections). Prints numbers; never fails on speed.
set -euo pipefail
build=${1:-build}
tide="$build/tide"

echo "== scheduler: one pass per placement strategy (order + placement; bench/results.json),"
echo "   then deep queues: every GPU held, the jobs waiting passed over again"
"$build/bench/bench_sched" --json bench/results.json --deep
echo
echo "== scheduler: the same pass with backfill and preemption on (sched_config_defaults), binpack"
"$build/bench/bench_sched" --full --only binpack

echo
echo "== start-time ETAs: one eta_plan_run (held under the server's lock at most once a second)"
"$build/bench/bench_eta"

echo
bash "$(dirname "$0")/sim.sh" "$build"

echo
bash "$(dirname "$0")/agent.sh" "$build" bench/results.json

echo
python3 "$(dirname "$0")/tls.py" "$build" || echo "tls bench failed; skipping"

echo
echo "== dashboard: the page's API calls with 10000 jobs waiting (bench/dashboard.py)"
TIDE_BIN="$tide" python3 "$(dirname "$0")/dashboard.py" 10000 20
python3 "$(dirname "$0")/events.py" "$tide"

echo
echo "== end to end: 16 agents x 8 fake GPUs, 1,000 jobs of sleep 1 (bench/e2e.py)"
python3 "$(dirname "$0")/e2e.py" "$tide" || echo "end-to-end bench failed; skipping"

echo
echo "== submit: batches, a 1,000-task array, the CLI (bench/submit.py)"
python3 "$(dirname "$0")/submit.py" "$tide" || echo "submit bench failed; skipping"

echo
bash "$(dirname "$0")/cli.sh" "$build" || echo "cli bench failed; skipping"

echo
echo "== containers: a containerised job's start overhead against a bare process (bench/containers.py)"
python3 "$(dirname "$0")/containers.py" "$tide" 10 || echo "containers bench failed; skipping"

echo
echo "== /metrics: 16 agents x 8 fake GPUs, 128 running and 10,000 pending jobs"
python3 "$(dirname "$0")/metrics.py" "$tide" || echo "metrics bench failed; skipping"

echo
echo "== API: POST /v1/jobs accepted per second (SQLite WAL, synchronous=FULL)"
if ! command -v wrk >/dev/null 2>&1; then
  apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "wrk not installed; skipping"; exit 0; }
fi
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tide" server --listen "127.0.0.1:$port" --data "$dir/data" >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -f "$dir/data/admin.token" ] && curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
cat >"$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"command":["true"],"gpus":1,"name":"bench"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $(cat "$dir/data/admin.token")"
LUA
for conns in 1 8; do
  rate=$(wrk -t1 -c"$conns" -d5s -s "$dir/post.lua" "http://127.0.0.1:$port/v1/jobs" | awk '/Requests\/sec/ {print $2}')
  printf '%-2d client(s): %s jobs/s\n' "$conns" "$rate"
done
