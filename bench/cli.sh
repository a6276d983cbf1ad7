#!/usr/bin/env bash
# The CLI's cost per call, as a shell loop pays it: N sequential
# `tide submit` processes against a running server (per-call ms and calls
# per second), `tide --help` alone, /bin/true (what any process costs at the
# machine's current load), and a 1,000-task array end to end.
# TIDE_BEFORE=/path/to/an/older/tide adds the same rows for that binary
# (same server), for before/after numbers. Prints numbers; never fails on speed.
# Usage: bench/cli.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build}
n=${2:-300}
tide=$(cd "$build" && pwd)/tide
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tide" server --listen "127.0.0.1:$port" --data "$dir/data" >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/data/admin.token" ] && break; sleep 0.1; done
sleep 0.3
export TIDE_SERVER="http://127.0.0.1:$port" TIDE_TOKEN="$(cat "$dir/data/admin.token")"
cd "$dir" # no ./.tide/ here to read

# CPU (user + system, ms) used by finished children of this shell, and by the server
children_cpu_ms() { # reads what `times >"$dir/cpu"` wrote in this shell
  tail -1 "$dir/cpu" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%d\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }'
}
server_cpu_ms() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' "/proc/$server/stat"
}

# times N runs of "$@" (stdout discarded); prints rate and per-call ms
loop() {
  local label=$1 count=$2
  shift 2
  local t0 t1 all0 all1 cpu0 cpu1 srv0 srv1
  for _ in 1 2 3; do "$@" >/dev/null; done # warm the page cache
  times >"$dir/cpu" # `times` in a $(...) subshell would see no children
  cpu0=$(children_cpu_ms)
  srv0=$(server_cpu_ms)
  all0=$EPOCHREALTIME
  for _ in $(seq "$count"); do
    t0=$EPOCHREALTIME
    "$@" >/dev/null
    t1=$EPOCHREALTIME
    echo "$t0 $t1"
  done >"$dir/times"
  all1=$EPOCHREALTIME
  times >"$dir/cpu"
  cpu1=$(children_cpu_ms)
  srv1=$(server_cpu_ms)
  awk '{ printf "%.3f\n", ($2 - $1) * 1000 }' "$dir/times" | sort -n |
    awk -v label="$label" -v secs="$(echo "$all1 - $all0" | bc -l)" \
      -v cpu=$((cpu1 - cpu0)) -v srv=$((srv1 - srv0)) '
    { ms[NR] = $1 }
    END {
      printf "  %-28s %6.0f calls/s; per call ms: p50 %.2f, p90 %.2f, max %.2f; " \
        "CPU per call ms: tide %.2f, server %.2f (%d calls)\n",
        label, NR / secs, ms[int(NR * 0.5) + 1], ms[int(NR * 0.9) + 1], ms[NR],
        cpu / NR, srv / NR, NR
    }'
}

echo "== CLI: sequential processes against one server (load now: $(cut -d' ' -f1-3 /proc/loadavg))"
# The server's work per submit grows with its queue, so every binary's
# single submits run before any array fills the queue.
names=(tide)
bins=("$tide")
if [ -n "${TIDE_BEFORE:-}" ]; then
  names=(before tide)
  bins=("$TIDE_BEFORE" "$tide")
fi
loop "/bin/true (the floor)" "$n" /bin/true
for i in "${!bins[@]}"; do
  loop "${names[$i]} --help" "$n" "${bins[$i]}" --help
done
for i in "${!bins[@]}"; do
  loop "${names[$i]} submit" "$n" "${bins[$i]}" submit --gpus 0 -- true
done
for i in "${!bins[@]}"; do
  loop "${names[$i]} submit --array 0-999" 5 "${bins[$i]}" submit --gpus 0 --array 1000 -- true
done
echo "  (issue 11: sbatch 124 submits/s on this machine; goal: >= 250 tide submits/s)"
