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
        # A project filter works whatever the grouping (rows by pool carry no project).
        vp = c.api("GET", "/v1/usage?project=vision&by=pool")["rows"]
        vision_ms = sum(r["cost_micros"] for k, r in rows.items() if k[0] == "vision")
        assert len(vp) == 1 and vp[0]["cost_micros"] == vision_ms, (vp, rows)
        # Project tokens see their own rows only, and no idle cost.
        tok = c.api("POST", "/v1/tokens", {"name": "v", "projects": ["vision"]}, expect=201)["token"]
        mine = c.api("GET", "/v1/usage?by=queue", token=tok)
        assert {r["project"] for r in mine["rows"]} == {"vision"} and mine["total"] is None, mine
        try:
            c.api("GET", "/v1/usage?project=speech", token=tok)
            raise AssertionError("other project's usage shown")
        except ApiError as e:
            assert e.status == 403, e
        # ... and in the pools, only their projects' spend.
        assert {r["project"] for r in pool(c)["projects"]} == {"vision", "speech"}, pool(c)
        theirs = c.api("GET", "/v1/pools", token=tok)["pools"][0]
        assert {r["project"] for r in theirs["projects"]} == {"vision"}, theirs["projects"]
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


def budget_config(extra):
    return POOL + ("projects:\n  - name: vision\n    budget_daily: 2.00\n    alert_pct: [100]\n"
                   "    hard_cap: true\n" + extra)


def alerted(c):
    # The alert is the project's event: its filter finds it.
    return any(e["kind"] == "budget_alert" and "100%" in e["message"] and e["project"] == "vision"
               for e in c.api("GET", "/v1/events?project=vision&kind=budget_alert")["events"])


def spent(c):
    m = c.api("GET", "/metrics")
    line = next(ln for ln in m.split("\n")
                if ln.startswith('tide_project_budget_spent{project="vision",period="daily"}'))
    units, micros = line.split()[-1].split(".")  # an exact decimal with six places
    return int(units) * 1000000 + int(micros)


def test_reject_refuses_jobs_at_the_cap_and_the_spend_survives_a_restart():
    with Cluster(agents=0, config=budget_config("    on_exhausted: reject\n")) as c:
        first = c.submit(gpus=1, project="vision", command=["sh", "-c", "sleep 4"])
        assert c.wait_final([first["id"]], timeout=60)[first["id"]]["state"] == "succeeded"
        wait_until(lambda: alerted(c), 15, 0.2, what="the 100% alert")
        try:
            c.submit(gpus=1, project="vision", command=["true"])
            raise AssertionError("a job over the budget was accepted")
        except ApiError as e:
            assert e.status == 403 and e.body["error"]["field"] == "project", e.body
            assert "budget exhausted" in e.body["error"]["message"], e.body
        p = c.cli("submit", "--project", "vision", "--", "true")
        assert p.returncode != 0 and "budget exhausted" in p.stderr, p
        other = c.submit(gpus=1, project="default", command=["true"])
        assert c.wait_final([other["id"]], timeout=60)[other["id"]]["state"] == "succeeded"
        before = spent(c)
        assert before >= 2000000, before
        c.kill_server()
        c.start_server()
        assert spent(c) == before  # the day's spend is kept, not started again
        try:
            c.submit(gpus=1, project="vision", command=["true"])
            raise AssertionError("the restart forgot the budget")
        except ApiError as e:
            assert e.status == 403, e.body
        # The alert is not raised a second time for the same day.
        time.sleep(1.5)
        n = sum(1 for e in c.api("GET", "/v1/events")["events"] if e["kind"] == "budget_alert")
        assert n == 1, n
        # The budgets' state is the server's, loaded before it serves, not
        # the pools' thread's: without pools the cap still holds.
        c.kill_server()
        with open(c.config, "w") as f:
            f.write(budget_config("    on_exhausted: reject\n").replace(POOL, ""))
        c.start_server()
        try:
            c.submit(gpus=1, project="vision", command=["true"])
            raise AssertionError("a restart without pools forgot the budget")
        except ApiError as e:
            assert e.status == 403, e.body


def test_stop_running_checkpoints_the_projects_running_job_at_the_cap():
    with Cluster(agents=0, config=budget_config("    stop_running: true\n"), kill_grace_s=3) as c:
        job = c.submit(gpus=1, project="vision",
                       command=["sh", "-c", "trap 'echo saved; exit 0' TERM; sleep 120 & wait $!"])
        c.wait_state(job["id"], "running", timeout=60)
        wait_until(lambda: alerted(c), 30, 0.2, what="the 100% alert")
        j = wait_until(lambda: (j := c.job(job["id"]))["state"] == "pending" and j, 30, 0.2,
                       what="the job stopped and waiting")
        assert "budget exhausted" in j.get("pending_reason", ""), j
        assert "saved" in c.logs(job["id"])  # it was told to checkpoint first
        kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert "job_preempted" in kinds, kinds
        c.api("DELETE", f"/v1/jobs/{job['id']}")


SPOT = POOL.replace("billing: on_demand", "billing: spot\n    interruption_grace_s: 600")


def test_a_spot_interruption_deadline_survives_a_restart():
    with Cluster(agents=0, config=SPOT) as c:
        job = c.submit(gpus=1, preemptible=True, command=["sh", "-c", "sleep 120"])
        c.wait_state(job["id"], "running", timeout=60)
        name = c.job(job["id"])["node"]
        c.cli("nodes", "interrupt", str(c.node(name)["id"]), check=True)
        deadline = c.node(name)["interrupt_deadline_ms"]
        assert deadline and deadline > time.time() * 1000 + 500000, c.node(name)
        c.kill_server()
        c.start_server()
        n = c.node(name)
        # The stop reaches the agent at once (push), so the emptied node may
        # already be released; its deadline must have survived either way.
        assert n["interrupt_deadline_ms"] == deadline, n
        assert n["state"] in ("draining", "lost", "released"), n
        c.api("DELETE", f"/v1/jobs/{job['id']}")


if __name__ == "__main__":
    run_tests([test_usage_by_project_and_queue_adds_up_to_the_pools_cost,
               test_bad_usage_queries_name_the_field,
               test_reject_refuses_jobs_at_the_cap_and_the_spend_survives_a_restart,
               test_stop_running_checkpoints_the_projects_running_job_at_the_cap,
               test_a_spot_interruption_deadline_survives_a_restart])
