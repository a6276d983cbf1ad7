#!/usr/bin/env bash
# make bench, simulator section: replay times of `tide sim` (wall-clock,
# from its own stderr timing) for the full Philly trace at its original
# size under FIFO, SJF and LAS, elastic against fixed (Philly and ITP
# cluster04), deep queues (the same trace on 64 GPUs,
# tens of thousands waiting, and at a fifth of its size), and a 1M-job
# synthetic trace on 10,000 nodes. Reports numbers; never fails on speed. A missing trace is skipped;
# a run over SIM_BENCH_TIMEOUT seconds (300) is reported as failed.
set -uo pipefail
build=${1:-build}
tide="$build/tide"
root=$(cd "$(dirname "$0")/.." && pwd)
philly="$root/../shared/data/traces/philly-pollux/philly.csv"

sim_time() { # label, then tide sim arguments; prints the "simulated ... in X s" line
  local label=$1; shift
  local out
  out=$( { timeout "${SIM_BENCH_TIMEOUT:-300}" /usr/bin/env time -f "%M" "$tide" sim "$@" --json >/dev/null; } 2>&1 ) || {
    printf '%-34s failed: %s\n' "$label" "$(echo "$out" | tail -1)"; return; }
  local secs jobs mem
  secs=$(echo "$out" | sed -n 's/.*simulated \([0-9]*\) jobs in \([0-9.]*\) s.*/\2/p' | tail -1)
  jobs=$(echo "$out" | sed -n 's/.*simulated \([0-9]*\) jobs in.*/\1/p' | tail -1)
  mem=$(echo "$out" | tail -1)
  printf '%-34s %8s jobs %8s s  %6s MiB max RSS\n' "$label" "$jobs" "$secs" "$((mem / 1024))"
}

echo "== simulator: tide sim replay time (event-driven, real sched_pass)"
if [ -r "$philly" ]; then
  for p in fifo sjf las; do
    sim_time "Philly, 2,490 GPUs, $p" --trace "$philly" --format philly \
      --config "$root/examples/sim/philly.yaml" --policy "$p"
  done
  for p in fifo las; do
    sim_time "Philly, 64 GPUs (8 x 8), $p" --trace "$philly" --format philly --policy "$p"
  done
  # Elastic (4 + 0-32 nodes, the autoscaler on the virtual clock) against
  # the same 36 nodes fixed: docs/sim.md "Speed" has the goal (within 2x).
  sim_time "Philly, elastic 4 + 0-32 nodes, fifo" --trace "$philly" --format philly \
    --config "$root/examples/sim/elastic.yaml"
  sim_time "Philly, 36 nodes fixed, fifo" --trace "$philly" --format philly \
    --config "$root/examples/sim/elastic-fixed.yaml"
  for p in fifo sjf las fifo_strict; do
    sim_time "Philly, 496 GPUs (a fifth), $p" --trace "$philly" --format philly \
      --config "$root/examples/sim/philly-fifth.yaml" --policy "$p"
  done
else
  echo "Philly trace not at $philly; skipping"
fi
itp="$root/../shared/data/traces/microsoft-itp/cluster04.csv"
if [ -r "$itp" ]; then
  sim_time "ITP cluster04, elastic 4 + 0-32 nodes" --trace "$itp" --format itp \
    --config "$root/examples/sim/elastic.yaml"
  sim_time "ITP cluster04, 36 nodes fixed" --trace "$itp" --format itp \
    --config "$root/examples/sim/elastic-fixed.yaml"
fi
sim_time "synthetic 1M jobs, 10k nodes, fifo" --synthetic 1000000 --seed 1 --nodes 10000 \
  --gpus-per-node 8 --policy fifo
