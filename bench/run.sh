#!/usr/bin/env bash
# make bench: the scheduler pass benchmark, simulator replay times, an idle
# agent's CPU and memory (bench/agent.sh), the agent's start of a wave of
# tasks (bench/bench_task_start.c), GET /metrics under a 10,000-job
# queue (bench/metrics.py), the dashboard's API calls under a 10k-job queue
# (bench/dashboard.py), event listings (bench/events.py), the end-to-end row
# (bench/e2e.py: 1,000 jobs on 16 agents, and where its CPU goes: bench/e2e_profile.py), the submit paths (bench/submit.py:
# POST /v1/jobs from 1 and 8 connections with wrk, batches, arrays, the CLI), the CLI per call (bench/cli.sh)
# and containers. Prints numbers; never fails on speed.
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
echo "== scheduler: deep queues of jobs naming a GPU model (each placed and explained)"
"$build/bench/bench_sched" --quick --deep --model --only loadaware
echo
echo "== server: its pass with 20,000 jobs waiting behind a full agent (bench/deep_pass.py)"
python3 "$(dirname "$0")/deep_pass.py" "$tide" || echo "deep pass bench failed; skipping"

echo
echo "== start-time ETAs: one eta_plan_run (held under the server's lock at most once a second)"
"$build/bench/bench_eta"

echo
bash "$(dirname "$0")/sim.sh" "$build"

echo
bash "$(dirname "$0")/agent.sh" "$build" bench/results.json

echo
echo "== agent: starting a wave of 8 tasks, one by one against side by side (bench/bench_task_start.c)"
"$build/bench/bench_task_start" || echo "task start bench failed; skipping"

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
echo "== end to end, where it goes: system calls and CPU per job by process (bench/e2e_profile.py, perf)"
if command -v perf >/dev/null 2>&1; then
  python3 "$(dirname "$0")/e2e_profile.py" "$tide" || echo "e2e profile failed; skipping"
else
  echo "perf is not installed (Debian: linux-perf); skipping"
fi

echo
echo "== submit: POST /v1/jobs from 1 and 8 connections (wrk; SQLite WAL, each commit flushed),"
echo "   batches, 1,000-task arrays, the CLI (bench/submit.py)"
command -v wrk >/dev/null 2>&1 || apt-get install -y -qq wrk >/dev/null 2>&1 || true
python3 "$(dirname "$0")/submit.py" "$tide" || echo "submit bench failed; skipping"

echo
bash "$(dirname "$0")/cli.sh" "$build" || echo "cli bench failed; skipping"

echo
echo "== containers: a containerised job's start overhead against a bare process (bench/containers.py)"
python3 "$(dirname "$0")/containers.py" "$tide" 10 || echo "containers bench failed; skipping"

echo
echo "== /metrics: 16 agents x 8 fake GPUs, 128 running and 10,000 pending jobs"
python3 "$(dirname "$0")/metrics.py" "$tide" || echo "metrics bench failed; skipping"

