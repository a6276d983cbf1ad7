#!/usr/bin/env bash
# e2e: `tide sim` on the repo's fixtures: the hand-computed tiny trace gives
# its known numbers, two runs give byte-identical report.json, the HTML is
# one static file, --compare prints one column per config, bad input is
# refused with its reason, and --help lists every flag.
set -euo pipefail
tide=${TIDE_BIN:?TIDE_BIN must name the tide binary}
data=${TIDE_TEST_DATA:?TIDE_TEST_DATA must name tests/data}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tide" sim --trace "$data/sim/tiny.csv" --format csv --config "$data/sim/tiny.yaml" \
  --out "$dir/a" >"$dir/a.txt" 2>"$dir/a.err" || fail "tiny run exited $?: $(cat "$dir/a.err")"
"$tide" sim --trace "$data/sim/tiny.csv" --format csv --config "$data/sim/tiny.yaml" \
  --out "$dir/b" --quiet >/dev/null || fail "second run"
cmp -s "$dir/a/report.json" "$dir/b/report.json" || fail "report.json differs between identical runs"
python3 - "$dir/a/report.json" <<'PY' || fail "tiny report numbers"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["jct_s"]["avg"] == 5200.0, r["jct_s"]
assert r["wait_s"]["avg"] == 1600.0, r["wait_s"]
assert r["makespan_s"] == 7200.0
assert r["utilisation"]["allocated_fraction"] == 0.875
assert r["cost"]["total_micros"] == 12000000 and r["cost"]["idle_micros"] == 1500000
assert r["jobs"]["completed"] == 6
PY
grep -q "avg JCT (h)" "$dir/a.txt" || fail "no table on stdout"
grep -q "1.44" "$dir/a.txt" || fail "avg JCT 1.44 h not in the table"
[ -s "$dir/a/report.html" ] && [ -s "$dir/a/timeline.csv" ] || fail "missing report.html or timeline.csv"
grep -q "<svg" "$dir/a/report.html" || fail "no inline SVG"
! grep -qi "<script\|http://\|https://[a-z]" <(grep -v 'xmlns=' "$dir/a/report.html") || fail "html loads something"

# Start-time ETAs: with the trace's durations as estimates, jobs 4-6 are
# each due at 3600 s, when they start; report.json, the table and the HTML.
"$tide" sim --trace "$data/sim/tiny.csv" --format csv --config "$data/sim/tiny.yaml" --eta \
  --out "$dir/eta" >"$dir/eta.txt" 2>/dev/null || fail "--eta run"
python3 - "$dir/eta/report.json" <<'PY' || fail "eta numbers"
import json, sys
e = json.load(open(sys.argv[1]))["eta"]
assert e["waited"]["jobs"] == 3, e
assert e["waited"]["abs_error_s"]["p90"] == 0.0 and e["unknown"] == 0, e
assert e["by_basis"] == {"now": 3, "est_runtime": 3}, e
PY
grep -q "ETA: jobs that waited" "$dir/eta.txt" || fail "no ETA rows in the table"
grep -q "<h2>Start-time ETAs</h2>" "$dir/eta/report.html" || fail "no ETA table in report.html"

# The same trace under several configs, side by side.
printf 'sim:\n  name: las\nscheduler:\n  policy: las\n' >"$dir/las.yaml"
printf 'sim:\n  name: sjf\nscheduler:\n  policy: sjf\n' >"$dir/sjf.yaml"
"$tide" sim --trace "$data/sim/tiny.csv" --format csv --config "$data/sim/tiny.yaml" --quiet \
  --compare "$dir/las.yaml" "$dir/sjf.yaml" --out "$dir/c" >"$dir/c.txt" || fail "compare"
head -1 "$dir/c.txt" | grep -q "las.*sjf" || fail "compare header: $(head -1 "$dir/c.txt")"
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['runs']) == 2" "$dir/c/report.json" \
  || fail "compare report.json"

# Bad rows are skipped with their line; a bad format or flag is refused.
"$tide" sim --trace "$data/sim/philly_small.csv" --format philly --nodes 2 --out "$dir/p" \
  >/dev/null 2>"$dir/p.err" || fail "philly fixture"
grep -q "philly_small.csv:10: skipped row" "$dir/p.err" || fail "no line-numbered warning: $(cat "$dir/p.err")"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['trace']['rows_dropped']==4 and r['jobs']['rejected']==2, r['trace']" \
  "$dir/p/report.json" || fail "philly fixture counts"
if "$tide" sim --trace "$data/sim/tiny.csv" --format nope 2>"$dir/e.err"; then fail "bad format accepted"; fi
grep -q "unknown format 'nope'" "$dir/e.err" || fail "bad format message"
if "$tide" sim --synthetic 10 --policy lottery --quiet 2>"$dir/e.err" >/dev/null; then fail "bad policy accepted"; fi
grep -q "unknown policy 'lottery'" "$dir/e.err" || fail "bad policy message"

# Synthetic runs are seeded.
"$tide" sim --synthetic 500 --seed 3 --nodes 4 --policy las --json --quiet >"$dir/s1.json"
"$tide" sim --synthetic 500 --seed 3 --nodes 4 --policy las --json --quiet >"$dir/s2.json"
cmp -s "$dir/s1.json" "$dir/s2.json" || fail "synthetic runs differ"

# Elastic: the burst of test_sim_elastic.c through the CLI, twice, same bytes;
# the example config loads and runs.
for k in 1 2; do
  "$tide" sim --trace "$data/sim/elastic.csv" --format csv --config "$data/sim/elastic.yaml" \
    --out "$dir/el$k" >"$dir/el$k.txt" || fail "elastic run $k"
done
cmp -s "$dir/el1/report.json" "$dir/el2/report.json" || fail "elastic report.json differs between runs"
python3 - "$dir/el1/report.json" <<'PY' || fail "elastic report numbers"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["cost"]
assert c["total_micros"] == 5820000 and c["idle_micros"] == 420000, c
assert c["by_kind"]["on_demand"] == 5820000, c["by_kind"]
assert [p["cost_micros"] for p in c["by_project"]] == [3600000, 1800000], c["by_project"]
p = r["elastic"]["pools"][0]
assert p["created"] == 2 and p["released"] == 1 and p["peak_nodes"] == 2, p
assert abs(p["node_hours"] - 5820 / 3600) < 1e-6, p
assert [e["action"] for e in r["elastic"]["scale_events"]] == ["create", "ready", "ready", "drain", "release"]
PY
grep -q "nodes created" "$dir/el1.txt" || fail "no elastic rows in the table"
grep -q "Elastic pools" "$dir/el1/report.html" || fail "no elastic table in report.html"
"$tide" sim --synthetic 300 --seed 1 --config "$data/../../examples/sim/elastic.yaml" --quiet --json \
  >"$dir/ex.json" || fail "examples/sim/elastic.yaml"
"$tide" sim --synthetic 300 --seed 1 --config "$data/../../examples/sim/spot.yaml" --quiet --json \
  >"$dir/exs.json" || fail "examples/sim/spot.yaml"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['budgets']['alerts_total'] > 0 and r['elastic']['interruptions']['interruptions'] > 0" \
  "$dir/exs.json" || fail "examples/sim/spot.yaml drew no interruptions or alerts"

# Budgets: alerts at their virtual times, a hard cap holding a job to the
# next UTC day; busy utilisation from the trace's gpu_util column.
"$tide" sim --trace "$data/sim/budget.csv" --format csv --config "$data/sim/budget.yaml" \
  --out "$dir/bu" >"$dir/bu.txt" 2>"$dir/bu.err" || fail "budget run: $(cat "$dir/bu.err")"
python3 - "$dir/bu/report.json" <<'PY' || fail "budget report numbers"
import json, sys
r = json.load(open(sys.argv[1]))
b = r["budgets"]
assert [(a["t_s"], a["pct"], a["spent_micros"]) for a in b["alerts"]] == \
    [(1800.0, 50, 1000000), (3600.0, 100, 2000000), (90000.0, 50, 1000000)], b["alerts"]
assert b["held_job_s"] == 81000.0 and b["projects"][0]["jobs_held"] == 1, b
u = r["utilisation"]
# busy: 4 GPU-h at 50 %, 1 at 100 %, 1 at 25 % of 50 provisioned
assert abs(u["busy_gpu_hours"] - 3.25) < 1e-9 and abs(u["busy_fraction"] - 0.065) < 1e-9, u
PY
grep -q "budget alerts" "$dir/bu.txt" || fail "no budget alerts in the table"
grep -q "81000 job-seconds" "$dir/bu.txt" || fail "no held job-seconds in the table"
grep -q "<h2>Budgets</h2>" "$dir/bu/report.html" || fail "no budget table in report.html"
! grep -q "not simulated" "$dir/bu.txt" || fail "the table still says budgets are not simulated"
grep -q "GPU busy (trace util) *n/a" "$dir/a.txt" || fail "busy is not n/a without a utilisation column"

# Spot interruption and provider failure: the job ends 2 s (backoff) + 90 s
# (grace + boot of the replacement) later than 3,660.
for k in 1 2; do
  "$tide" sim --trace "$data/sim/spot.csv" --format csv --config "$data/sim/spot.yaml" \
    --out "$dir/sp$k" >"$dir/sp$k.txt" || fail "spot run $k"
done
cmp -s "$dir/sp1/report.json" "$dir/sp2/report.json" || fail "spot report.json differs between runs"
python3 - "$dir/sp1/report.json" <<'PY' || fail "spot report numbers"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["elastic"]
assert r["jct_s"]["max"] == 3752.0, r["jct_s"]
assert e["interruptions"]["interruptions"] == 1 and e["interruptions"]["jobs_requeued"] == 1, e["interruptions"]
assert e["interruptions"]["delay_job_s"] == 90.0, e["interruptions"]
assert e["provider"]["create_failures"] == 1 and e["provider"]["backoff_s"] == 2.0, e["provider"]
acts = [x["action"] for x in e["scale_events"]]
assert acts[:2] == ["create", "create_failed"] and "interrupted" in acts, acts
PY
grep -q "spot interruptions" "$dir/sp1.txt" || fail "no interruption rows in the table"
grep -q "Spot interruptions and provider failures" "$dir/sp1/report.html" || fail "no spot table in report.html"
# Drawn interruptions and failures repeat for a seed.
cat >"$dir/rand.yaml" <<'YAML'
sim:
  name: seeded
pools:
  - name: spot
    gpus_per_node: 2
    min_nodes: 0
    max_nodes: 4
    boot_time_s: 60
    billing: spot
    price_per_node_hour: 3.60
    interruptions_per_node_hour: 2
    provider_failure_rate: 0.3
YAML
for k in 1 2; do
  "$tide" sim --synthetic 100 --seed 5 --max-duration 3600 --size-mix 1:50,2:50 \
    --config "$dir/rand.yaml" --quiet --json >"$dir/rand$k.json" || fail "seeded spot run $k"
done
cmp -s "$dir/rand1.json" "$dir/rand2.json" || fail "seeded spot runs differ"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['elastic']; assert e['interruptions']['interruptions'] > 0 and e['provider']['create_failures'] > 0, e['interruptions']" \
  "$dir/rand1.json" || fail "seeded spot run drew nothing"

"$tide" sim --help >"$dir/help.txt"
for flag in --trace --format --max-jobs --synthetic --seed --arrival-rate --size-mix --min-duration \
  --max-duration --config --nodes --gpus-per-node --gpu-model --gpu-memory --price --policy \
  --placement --backfill --preempt --preempt-interval --preempt-overhead --no-oracle --out \
  --compare --json --quiet --help; do
  grep -q -- "$flag" "$dir/help.txt" || fail "--help does not mention $flag"
done
echo "ok: tide sim e2e"
