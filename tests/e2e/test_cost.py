"""End to end: cost by project, pool, queue and day (GET /v1/usage, tide usage), budgets that
reject at submit or stop running jobs, and metering that survives a server restart."""
import csv
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import ApiError, Cluster, run_tests, wait_until  # noqa: E402

# 3600.00 per node-hour on 1-GPU nodes: one unit (1,000,000 micro-units) per GPU-second.
POOL = """pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 3
    boot_timeout_s: 60
    price_per_node_hour: 3600.00
    billing: on_demand
    scale_down_window_s: 1
    scale_down_utilization: 0
    cooldown_s: 0
"""


def pool(c):
    return c.api("GET", "/v1/pools")["pools"][0]


def settled(c):
    """Waits until the pool has released every node, so the meters stand still."""
    wait_until(lambda: (p := pool(c))["nodes"]["ready"] == 0 and p["nodes"]["provisioning"] == 0
               and p["nodes"]["draining"] == 0, 60, 0.25, what="pool back to zero")
    time.sleep(1.5)  # one more metering tick after the last release


def test_usage_by_project_and_queue_adds_up_to_the_pools_cost():
    with Cluster(agents=0, config=POOL) as c:
        jobs = [c.submit(gpus=1, project="vision", queue="training", command=["sh", "-c", "sleep 3"]),
                c.submit(gpus=1, project="speech", queue="batch", command=["sh", "-c", "sleep 2"]),
                c.submit(gpus=1, project="vision", queue="batch", command=["sh", "-c", "sleep 2"])]
        final = c.wait_final([j["id"] for j in jobs], timeout=90)
        assert all(j["state"] == "succeeded" for j in final.values()), final
        settled(c)
        u = c.api("GET", "/v1/usage?by=project,queue")
        assert u["by"] == ["project", "queue"], u
        rows = {(r["project"], r["queue"]): r for r in u["rows"]}
        assert set(rows) == {("vision", "training"), ("vision", "batch"), ("speech", "batch"),
                             ("(idle)", "(idle)")}, rows
        # Each job held its GPU about as long as it ran (metered each second).
        for key, secs in ((("vision", "training"), 3), (("speech", "batch"), 2), (("vision", "batch"), 2)):
            got = rows[key]["gpu_hours"] * 3600
            assert secs - 1.5 <= got <= secs + 2.5, (key, got)
            assert abs(rows[key]["cost_micros"] - got * 1000000) <= 2, rows[key]
        total = u["total"]
        assert sum(r["cost_micros"] for r in u["rows"]) == total["cost_micros"], u
        assert rows[("(idle)", "(idle)")]["cost_micros"] == total["idle_cost_micros"], u
        p = pool(c)
        assert total["cost_micros"] == p["cost_micros"], (total, p)
        assert 0 < total["utilisation"] < 1, total
        # By pool and day: one day, the capacity row is the pool's.
        d = c.api("GET", "/v1/usage?by=pool,day")
        today = time.strftime("%Y-%m-%d", time.gmtime())
        assert {r["day"] for r in d["rows"]} == {today} and {r["pool"] for r in d["rows"]} == {"elastic"}, d
        assert len(d["capacity"]) == 1 and d["capacity"][0]["cost_micros"] == p["cost_micros"], d
        # A range with no days is empty, not an error.
        e = c.api("GET", "/v1/usage?from=2001-01-01&to=2001-01-31")
        assert e["rows"] == [] and e["total"]["cost_micros"] == 0, e
        # The CLI: table, CSV and JSON of the same numbers.
        table = c.cli("usage", "--by", "project", check=True).stdout
        assert "PROJECT" in table and "vision" in table and "(idle)" in table and "total:" in table, table
        out = c.cli("usage", "--by", "project,queue", "--csv", check=True).stdout
        parsed = list(csv.DictReader(io.StringIO(out)))
        assert {(r["project"], r["queue"]) for r in parsed} == set(rows), out
        vt = next(r for r in parsed if r["project"] == "vision" and r["queue"] == "training")
        assert vt["cost"] == rows[("vision", "training")]["cost"], (vt, rows)
        js = json.loads(c.cli("usage", "--by", "day", "--json", check=True).stdout)
        assert js["rows"][0]["day"] == today, js
        share = c.cli("usage", "--share", check=True).stdout  # the fair-share view
        assert "no projects configured" in share, share
        # Project tokens see their own rows only, and no idle cost.
        tok = c.api("POST", "/v1/tokens", {"name": "v", "projects": ["vision"]}, expect=201)["token"]
        mine = c.api("GET", "/v1/usage?by=queue", token=tok)
        assert {r["project"] for r in mine["rows"]} == {"vision"} and mine["total"] is None, mine
        try:
            c.api("GET", "/v1/usage?project=speech", token=tok)
            raise AssertionError("other project's usage shown")
        except ApiError as e:
            assert e.status == 403, e
        # Metering survives a restart: the same report afterwards.
        c.kill_server()
        c.start_server()
        again = c.api("GET", "/v1/usage?by=project,queue")
        assert {(r["project"], r["queue"]): r["cost_micros"] for r in again["rows"]} == \
            {k: r["cost_micros"] for k, r in rows.items()}, (again, rows)


def test_bad_usage_queries_name_the_field():
    with Cluster(agents=0, config=POOL) as c:
        for query, field in (("by=project,month", "by"), ("from=2026-02-30", "from"),
                             ("to=yesterday", "to"), ("from=2026-03-02&to=2026-03-01", "to")):
            try:
                c.api("GET", f"/v1/usage?{query}")
                raise AssertionError(f"{query} accepted")
            except ApiError as e:
                assert e.status == 400 and e.body["error"]["field"] == field, (query, e.body)
        p = c.cli("usage", "--csv", "--json")
        assert p.returncode != 0 and "choose one" in p.stderr, p


if __name__ == "__main__":
    run_tests([test_usage_by_project_and_queue_adds_up_to_the_pools_cost,
               test_bad_usage_queries_name_the_field])
