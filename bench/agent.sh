#!/usr/bin/env bash
# make bench, agent section: CPU and memory of one idle `tide agent` with 8
# fake GPUs (8xH200:141GB) registered to a local server, over
# AGENT_BENCH_SECONDS (10) after it is ready: utime+stime from
# /proc/PID/stat, VmRSS and VmHWM from /proc/PID/status. Adds "agent_idle"
# to the results file (argument 2, default bench/results.json). Reports;
# never fails on numbers.
set -uo pipefail
build=${1:-build}
results=${2:-bench/results.json}
tide="$build/tide"
secs=${AGENT_BENCH_SECONDS:-10}
gpus="8xH200:141GB"

echo "== agent: idle, $gpus fake GPUs, ${secs} s after registering"
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tide" server --listen "127.0.0.1:$port" --data "$dir/data" >"$dir/server.log" 2>&1 &
server=$!
agent=
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 100); do
  [ -f "$dir/data/join.token" ] && curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done
if [ ! -f "$dir/data/join.token" ]; then
  echo "server did not start; skipping ($(tail -1 "$dir/server.log"))"; exit 0
fi
mkdir -p "$dir/agent"
"$tide" agent --server "http://127.0.0.1:$port" --token-file "$dir/data/join.token" \
  --name bench-node --work "$dir/agent" --fake-gpus "$gpus" >"$dir/agent.log" 2>&1 &
agent=$!
admin=$(cat "$dir/data/admin.token")
ready=
for _ in $(seq 200); do
  if curl -sf -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/v1/nodes" 2>/dev/null |
    python3 -c 'import json, sys
d = json.load(sys.stdin)
nodes = d.get("nodes", d) if isinstance(d, dict) else d
sys.exit(0 if any(n.get("name") == "bench-node" and n.get("state") == "ready" for n in nodes) else 1)' \
      2>/dev/null; then ready=1; break; fi
  kill -0 "$agent" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "agent did not become ready; skipping ($(tail -1 "$dir/agent.log"))"; exit 0
fi

ticks() { # utime + stime of $agent in clock ticks (fields 14, 15; comm may hold spaces)
  sed 's/^.*) //' "/proc/$agent/stat" | awk '{print $12 + $13}'
}
hz=$(getconf CLK_TCK)
t0=$(date +%s.%N); c0=$(ticks)
sleep "$secs"
t1=$(date +%s.%N); c1=$(ticks)
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$agent/status")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$agent/status")
read -r wall cpu_ms pct < <(awk -v a="$t0" -v b="$t1" -v c0="$c0" -v c1="$c1" -v hz="$hz" \
  'BEGIN { w = b - a; ms = (c1 - c0) * 1000 / hz; printf "%.2f %.0f %.3f\n", w, ms, ms / 10 / w }')
printf '%-34s %8s s  %6s ms CPU (%s %%)  %6.1f MiB RSS  %6.1f MiB peak\n' \
  "agent idle, $gpus" "$wall" "$cpu_ms" "$pct" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" \
  "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')"

if [ -f "$results" ]; then
  python3 - "$results" "$gpus" "$wall" "$cpu_ms" "$pct" "$rss" "$hwm" <<'PY'
import json, sys
path, gpus, wall, cpu_ms, pct, rss, hwm = sys.argv[1:]
with open(path) as f:
    d = json.load(f)
d["agent_idle"] = {"fake_gpus": gpus, "seconds": float(wall), "cpu_ms": int(cpu_ms),
                   "cpu_percent": float(pct), "rss_kib": int(rss), "peak_rss_kib": int(hwm)}
with open(path, "w") as f:
    json.dump(d, f, indent=1)
    f.write("\n")
PY
fi
