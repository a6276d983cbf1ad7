"""End to end: /metrics of a running cluster (jobs in several states, an elastic pool, a budget)
passes `promtool check metrics` without a problem and agrees with the API; every metric the
Grafana dashboard (contrib/grafana/tide.json) queries exists; the Prometheus example config is
valid; /metrics needs the admin token."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, check_agent_keeps_connections, run_tests, wait_until  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PROMTOOL = shutil.which("promtool")

CONFIG = """pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 2
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 2
    boot_timeout_s: 60
    price_per_node_hour: 36.00
    billing: on_demand
    cooldown_s: 0
projects:
  - name: vision
    budget_daily: 100.00
"""
FINAL = ("succeeded", "failed", "cancelled", "timeout")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset of label pairs): float} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"duplicate series: {line!r}"
        out[key] = float(m.group(3))
    return out


def get(samples, name, **labels):
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no sample {name}{labels}"
    return samples[key]


def series(samples, name):
    return {labels: v for (n, labels), v in samples.items() if n == name}


def promtool_check(text):
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True, capture_output=True,
                       timeout=30)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        f"promtool: rc {p.returncode}\n{p.stdout}{p.stderr}"


def check_histograms(samples):
    """Every histogram: buckets cumulative, +Inf equal to _count."""
    seen = 0
    for (name, labels), count in samples.items():
        if not name.endswith("_count") or (name[:-6] + "_sum", labels) not in samples:
            continue
        base = name[:-6]
        buckets = sorted((float("inf") if dict(l)["le"] == "+Inf" else float(dict(l)["le"]), v)
                         for l, v in series(samples, base + "_bucket").items()
                         if l - {("le", dict(l)["le"])} == labels)
        assert buckets and buckets[-1][0] == float("inf"), (base, labels, buckets)
        assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), (base, labels, buckets)
        assert buckets[-1][1] == count, (base, labels, buckets, count)
        seen += 1
    return seen


def test_metrics_pass_promtool_and_agree_with_the_api():
    assert PROMTOOL, "promtool not found (Debian package prometheus; scripts/deps.sh)"
    with Cluster(agents=1, fake_gpus="2xA100:80GB", config=CONFIG) as c:
        # One job only the pool fits (H200), one that succeeds, one that fails, one held on a
        # dependency (pending) and one cancelled while held.
        a = c.submit(gpus=1, gpu_model="H200*", project="vision", queue="training",
                     command=["sleep", "300"])
        b = c.submit(gpus=1, command=["true"])
        f = c.submit(gpus=1, command=["sh", "-c", "exit 3"])
        d = c.submit(gpus=1, command=["true"], depends_on=[a["id"]])
        e = c.submit(gpus=1, command=["true"], depends_on=[a["id"]])
        c.api("DELETE", f"/v1/jobs/{e['id']}")
        final = c.wait_final([b["id"], f["id"], e["id"]])
        assert [final[j["id"]]["state"] for j in (b, f, e)] == ["succeeded", "failed", "cancelled"], final
        c.wait_state(a["id"], "running", timeout=90)

        def metered_and_recorded():
            # GPU-seconds come with the pool loop's metering tick, the create call's result with
            # the tick after it returned: either may lag the job's start.
            s = parse(c.api("GET", "/metrics"))
            used = s.get(("tide_project_gpu_seconds_total",
                          frozenset({("project", "vision"), ("pool", "elastic")})), 0)
            calls = s.get(("tide_provider_calls_total",
                           frozenset({("pool", "elastic"), ("call", "create")})), 0)
            return used > 0 and calls >= 1
        wait_until(metered_and_recorded, 30, 0.5, what="GPU-seconds metered and the create recorded")

        jobs = c.jobs()
        nodes = c.api("GET", "/v1/nodes")["nodes"]
        pool = c.api("GET", "/v1/pools")["pools"][0]
        text = c.api("GET", "/metrics")
        promtool_check(text)
        s = parse(text)
        assert check_histograms(s) >= 4  # pass, submit and a wait histogram per queue that started jobs

        # Jobs by state and queue, as the API lists them.
        by = {}
        for j in jobs:
            by[(j["state"], j["queue"])] = by.get((j["state"], j["queue"]), 0) + 1
        queues = {dict(l)["queue"] for l in series(s, "tide_jobs")}
        assert {"default", "training"} <= queues, queues
        for q in queues:
            for st in ("pending", "starting", "running", "preempted", "lost"):
                assert get(s, "tide_jobs", state=st, queue=q) == by.get((st, q), 0), (st, q, by)
        for labels, v in series(s, "tide_jobs_finished_total").items():
            lab = dict(labels)
            assert v == by.get((lab["state"], lab["queue"]), 0), (lab, v, by)
        assert get(s, "tide_jobs_finished_total", state="failed", queue="default") == 1
        assert get(s, "tide_job_gpus", state="pending", queue="default") == 1
        # the one pending job is held on its dependency: not a stuck queue
        assert get(s, "tide_queue_oldest_pending_seconds", queue="default") == 0

        # The wait histogram counts every job that started, in its queue.
        started = {}
        for j in jobs:
            if j["attempt"] >= 1:
                started[j["queue"]] = started.get(j["queue"], 0) + 1
        assert started == {"default": 2, "training": 1}, started
        for q, n in started.items():
            assert get(s, "tide_job_wait_seconds_count", queue=q) == n, (q, n)
        assert get(s, "tide_submit_seconds_count") == 5
        assert get(s, "tide_jobs_submitted_total") == 5
        assert get(s, "tide_scheduler_pass_seconds_count") >= 1

        # Per-GPU gauges: one series per GPU of every ready node, labelled like DCGM's.
        ready = [n for n in nodes if n["state"] == "ready"]
        assert get(s, "tide_gpus") == sum(n["gpus_total"] for n in ready)
        assert get(s, "tide_nodes", state="ready") == len(ready)
        models = set()
        for n in ready:
            for g in n["gpus"]:
                lab = {"node": n["name"], "gpu": str(g["index"]), "model": g["name"]}
                models.add(g["name"])
                assert get(s, "tide_gpu_memory_total_bytes", **lab) == g["memory_total_mib"] * 1048576
                for fam in ("tide_gpu_utilization_ratio", "tide_gpu_memory_used_bytes",
                            "tide_gpu_temperature_celsius", "tide_gpu_power_watts"):
                    get(s, fam, **lab)
        assert models == {"A100", "H200"}, models
        assert len(series(s, "tide_gpu_power_watts")) == sum(len(n["gpus"]) for n in ready)

        # The pool, its scaling and its provider calls; cost and the budget.
        for st, n in pool["nodes"].items():
            assert get(s, "tide_pool_nodes", pool="elastic", state=st) == n, (st, pool)
        assert get(s, "tide_autoscaler_decisions_total", pool="elastic", decision="create") >= 1
        assert get(s, "tide_provider_calls_total", pool="elastic", call="create") >= 1
        assert get(s, "tide_provider_call_failures_total", pool="elastic", call="create") == 0
        assert get(s, "tide_pool_cost_total", pool="elastic", billing="on_demand") > 0
        assert get(s, "tide_project_budget", project="vision", period="daily") == 100.0
        assert 0 <= get(s, "tide_project_budget_spent", project="vision", period="daily") < 100.0
        # d first: once a is cancelled, the next pass fails its dependent d.
        c.api("DELETE", f"/v1/jobs/{d['id']}")
        c.api("DELETE", f"/v1/jobs/{a['id']}")


def test_metrics_need_a_metrics_token_that_reads_nothing_else():
    with Cluster(agents=0) as c:
        user = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["vision"]}, expect=201)
        status, body = c.request("GET", "/metrics", token=user["token"])
        assert status == 403 and "metrics token" in body["error"]["message"], (status, body)
        assert c.request("GET", "/metrics", token="")[0] == 401
        assert c.request("GET", "/metrics")[0] == 200  # the admin token
        # The CLI makes one; it reads /metrics and nothing else.
        p = c.cli("token", "create", "--name", "prometheus", "--metrics")
        assert p.returncode == 0, p.stderr
        prom = p.stdout.strip()
        status, text = c.request("GET", "/metrics", token=prom)
        assert status == 200 and "tide_jobs" in text, (status, text)
        for method, path, body in (("GET", "/v1/jobs", None), ("GET", "/v1/nodes", None),
                                   ("POST", "/v1/jobs", {"command": ["true"]}),
                                   ("POST", "/v1/tokens", {"name": "x", "kind": "metrics"}),
                                   ("POST", "/v1/agent/heartbeat", {})):
            status, body = c.request(method, path, body, token=prom)
            assert status == 403, (method, path, status, body)
        assert c.jobs() == [], "the metrics token submitted nothing"
        # Bad requests name the field.
        for body, field in (({"name": "p", "kind": "root"}, "kind"),
                            ({"name": "p", "kind": "metrics", "projects": ["vision"]}, "projects")):
            status, out = c.request("POST", "/v1/tokens", body)
            assert status == 400 and out["error"]["field"] == field, (body, status, out)
        p = c.cli("token", "create", "--name", "p", "--metrics", "--project", "vision")
        assert p.returncode == 2 and "--project" in p.stderr, (p.returncode, p.stderr)


PROMQL_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
PROMQL_KEYWORDS = {"and", "or", "unless", "offset", "bool"}


def dashboard_queries(node):
    """Every PromQL expression in a Grafana dashboard: panel targets and query variables."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                yield v["query"]
            else:
                yield from dashboard_queries(v)
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_queries(v)


def metric_names(expr):
    """The metric names a PromQL expression reads."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)   # strings
    e = re.sub(r"\{[^}]*\}", "", e)                # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)               # ranges
    e = PROMQL_GROUPING.sub("", e)
    e = re.sub(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,[^)]*\)", r"\1", e)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or m.group(0) in PROMQL_KEYWORDS:
            continue  # a function or an operator
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # an exponent or a unit in a number
        names.add(m.group(0))
    return names


def test_every_metric_the_grafana_dashboard_queries_exists():
    with open(os.path.join(ROOT, "contrib", "grafana", "tide.json")) as fh:
        dash = json.load(fh)
    assert dash["uid"] and dash["title"] and dash["panels"], "not a Grafana dashboard"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), ids
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource", variables
    for p in dash["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
    for p in dash["panels"]:  # a title that promises a dashed line keeps its promise
        if "dashed" in p["title"]:
            dashed = [o["matcher"]["options"] for o in p["fieldConfig"]["overrides"]
                      if {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}
                      in o["properties"] and o["matcher"]["id"] == "byFrameRefID"]
            assert dashed and set(dashed) <= {t["refId"] for t in p["targets"]}, p["title"]
    queries = list(dashboard_queries(dash))
    wanted = set().union(*(metric_names(q) for q in queries))
    assert len(queries) >= 20 and len(wanted) >= 20, (len(queries), wanted)
    assert metric_names('sum by (queue, le) (rate(tide_x_bucket{a="b"}[5m])) / on(x) tide_y * 1e3') \
        == {"tide_x_bucket", "tide_y"}  # the extractor itself

    with Cluster(agents=1, fake_gpus="1xA100:80GB", config=CONFIG) as c:
        j = c.submit(gpus=1, gpu_model="H200*", project="vision", command=["sleep", "2"])
        assert c.wait_final([j["id"]], timeout=90)[j["id"]]["state"] == "succeeded"
        have = lambda: {name for name, _ in parse(c.api("GET", "/metrics"))}  # noqa: E731
        wait_until(lambda: "tide_project_cost_total" in have(), 30, 0.5, what="project cost metered")
        missing = sorted(wanted - have())
        assert not missing, f"the dashboard queries metrics /metrics lacks: {missing}"

        # The scrape config example, with the token file it names pointing at a real token.
        with open(os.path.join(ROOT, "contrib", "prometheus", "prometheus.yml")) as fh:
            prom = fh.read()
        assert "credentials_file: /etc/prometheus/tide.token" in prom
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "tide.token")
            with open(token, "w") as fh:
                fh.write(c.api("POST", "/v1/tokens", {"name": "prometheus", "kind": "metrics"},
                               expect=201)["token"] + "\n")
            with open(token) as fh:
                assert c.request("GET", "/metrics", token=fh.read().strip())[0] == 200
            cfg = os.path.join(d, "prometheus.yml")
            with open(cfg, "w") as fh:
                fh.write(prom.replace("/etc/prometheus/tide.token", token))
            p = subprocess.run([PROMTOOL, "check", "config", cfg], capture_output=True, text=True,
                               timeout=30)
            assert p.returncode == 0, p.stdout + p.stderr


def test_a_finished_tasks_log_is_flushed_before_its_last_bytes_are_acknowledged():
    # Once the answer acknowledges an exit and its log's last bytes, the
    # agent forgets the task: the server flushes the log first. A job that
    # printed nothing has no log to flush.
    with Cluster(agents=1) as c:
        def log_syncs():
            return get(parse(c.api("GET", "/metrics")),
                       "tide_log_syncs_total")
        quiet = c.submit(command=["true"], gpus=1)["id"]
        assert c.wait_final([quiet])[quiet]["state"] == "succeeded"
        assert log_syncs() == 0
        loud = c.submit(command=["sh", "-c", "echo started; sleep 1; echo done"], gpus=1)["id"]
        assert c.wait_final([loud])[loud]["state"] == "succeeded"
        # counted as the answer to the exit's heartbeat goes, just after the exit is stored
        wait_until(lambda: log_syncs() >= 1, 10, what="the log flushed")
        assert c.api("GET", f"/v1/jobs/{loud}/logs").endswith("done\n")
        # 1 MiB printed at the end: the exit goes with its first 64 KiB, the
        # rest in later heartbeats, after the exit's acknowledgement; each
        # of those answers lets the agent delete what it sent, so is
        # flushed too (the exit's flush once covered the first chunk alone)
        before = log_syncs()
        big = c.submit(command=["sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' a; echo end"],
                       gpus=1)["id"]
        assert c.wait_final([big])[big]["state"] == "succeeded"
        wait_until(lambda: c.api("GET", f"/v1/jobs/{big}/logs").endswith("end\n"), 30,
                   what="the whole log")
        assert log_syncs() - before >= 2, (before, log_syncs())


def test_an_agent_keeps_its_connections_across_requests_and_a_server_restart():
    with Cluster(agents=1) as c:
        check_agent_keeps_connections(c)


def test_odd_gpu_names_and_gang_jobs_keep_the_metrics_right():
    # A GPU name or driver cut inside a character (an agent's long
    # non-ASCII text) broke the whole scrape and dropped the GPU or node
    # from /v1/nodes; a gang job's GPUs were counted once per node again.
    assert PROMTOOL, "promtool not found (Debian package prometheus; scripts/deps.sh)"
    with Cluster(agents=0) as c:
        c.register_by_hand("odd", driver="dd" + "\u00e9" * 60,
                           gpus=[{"index": 0, "name": "XY" + "\u00c4" * 60, "memory_total_mib": 1000},
                                 {"index": 1, "name": "H200", "memory_total_mib": 1000}])
        c.register_by_hand("plain", gpus=[{"index": i, "name": "H200", "memory_total_mib": 1000}
                                          for i in range(2)])
        nodes = {n["name"]: n for n in c.api("GET", "/v1/nodes")["nodes"]}
        assert "odd" in nodes and len(nodes["odd"]["gpus"]) == 2, nodes
        gang = c.submit(command=["true"], gpus=4, nodes=2)  # 2 GPUs on each node
        text = c.api("GET", "/metrics")
        promtool_check(text)
        gpus = series(parse(text), "tide_job_gpus")
        assert sum(gpus.values()) == 4, gpus
        c.api("DELETE", f"/v1/jobs/{gang['id']}")


if __name__ == "__main__":
    run_tests([
        test_odd_gpu_names_and_gang_jobs_keep_the_metrics_right,
        test_metrics_pass_promtool_and_agree_with_the_api,
        test_metrics_need_a_metrics_token_that_reads_nothing_else,
        test_every_metric_the_grafana_dashboard_queries_exists,
        test_a_finished_tasks_log_is_flushed_before_its_last_bytes_are_acknowledged,
        test_an_agent_keeps_its_connections_across_requests_and_a_server_restart,
    ])
