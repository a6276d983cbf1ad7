"""End to end: one tide.yaml for `tide sim` and `tide server` (pools: and the rest).

Every sim example and fixture must start a server, a tide.yaml in the
server's own form must run in the simulator, and a pool tried in the
simulator must run jobs on a real server with local agents.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, Cluster, run_tests  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM_CONFIGS = sorted(glob.glob(os.path.join(ROOT, "examples", "sim", "*.yaml"))
                     + glob.glob(os.path.join(ROOT, "tests", "data", "sim", "*.yaml")))

# The server's own form: sections the simulator skips (server:) or does not
# simulate (scheduler.preemption), and pool keys only the server acts on.
SERVER_FORM = """\
server:
  heartbeat_ms: 500
scheduler:
  policy: priority
  placement: binpack
  backfill: true
  preemption: true
projects:
  - name: project-0
    budget_daily: 100.00
pools:
  - name: h200
    gpu: H200
    gpus_per_node: 4
    gpu_memory_mib: 144384
    driver: fake
    provider: local
    min_nodes: 0
    max_nodes: 3
    boot_time_s: 30
    price_per_node_hour: 12.50
    schedule:
      - days: mon-fri
        from: "09:00"
        to: "18:00"
        min_nodes: 1
    steps:
      - queue_length: 10
        add: 2
  - name: a100
    gpu: A100
    gpus_per_node: 2
    gpu_memory_mib: 81920
    nodes: 2
    price_per_gpu_hour: 1.10
sim:
  seed: 7
"""


def run(*args, timeout=120):
    return subprocess.run([TIDE, *args], capture_output=True, text=True, timeout=timeout)


def check_config(path):
    return run("server", "--config", path, "--check-config")


def sim(path, *extra):
    """Runs path on its own trace (tests/data/sim/X.yaml has X.csv), else a synthetic one."""
    trace = os.path.splitext(path)[0] + ".csv"
    if "tests/data/sim" in path and os.path.exists(trace):
        source = ["--trace", trace, "--format", "csv"]
    else:
        source = ["--synthetic", "40", "--seed", "3"]
    return run("sim", *source, "--config", path, "--quiet", "--json", *extra)


def test_every_sim_example_and_fixture_starts_a_server():
    assert len(SIM_CONFIGS) >= 10, SIM_CONFIGS
    for path in SIM_CONFIGS:
        p = check_config(path)
        assert p.returncode == 0, (path, p.stderr)
        assert f"{path}: ok" in p.stdout, (path, p.stdout)
        s = sim(path)
        assert s.returncode == 0, (path, s.stderr)


def doc_blocks(name):
    with open(os.path.join(ROOT, "docs", name)) as f:
        return re.findall(r"```yaml\n(.*?)```", f.read(), re.S)


def test_the_yaml_examples_in_the_docs_work_in_both():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tide.yaml")
        blocks = [("sim.md", b) for b in doc_blocks("sim.md")] + \
                 [("config.md", b) for b in doc_blocks("config.md")]
        assert len(blocks) >= 6, blocks
        for doc, text in blocks:
            with open(path, "w") as f:
                f.write(text)
            p = check_config(path)
            assert p.returncode == 0, (doc, text, p.stderr)
            s = sim(path)
            if "queues:" in text or "quota_gpus" in text:
                # Not simulated yet, and refused by name rather than ignored.
                assert s.returncode == 2, (doc, text, s.stderr)
                assert "not simulated yet" in s.stderr or "runs no fair share" in s.stderr, s.stderr
            elif s.returncode != 0:
                # A budget for a project the synthetic trace lacks is a trace
                # check, made after the config was read and accepted.
                assert "no job of the trace is in project" in s.stderr, (doc, text, s.stderr)


def test_the_servers_form_runs_in_the_simulator_with_the_same_pools():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tide.yaml")
        with open(path, "w") as f:
            f.write(SERVER_FORM)
        p = check_config(path)
        assert p.returncode == 0, p.stderr
        assert "pool h200: 0..3 nodes of 4 x H200 (144384 MiB), on_demand, 12.5 per node-hour" \
            in p.stdout, p.stdout
        # nodes: 2 and price_per_gpu_hour are a fixed size and a node price for the server.
        assert "pool a100: 2..2 nodes of 2 x A100 (81920 MiB), on_demand, 2.2 per node-hour" \
            in p.stdout, p.stdout
        s = run("sim", "--synthetic", "40", "--config", path, "--quiet", "--json")
        assert s.returncode == 0, s.stderr
        report = json.loads(s.stdout)
        assert report["config"]["policy"] == "priority", report["config"]
        pools = {p["name"]: p for p in report["config"]["pools"]}
        assert set(pools) == {"h200", "a100"}, pools
        a100 = pools["a100"]
        assert (a100["nodes"], a100["gpus_per_node"], a100["gpu_model"]) == (2, 2, "A100"), a100
        assert a100["price_per_gpu_hour_micros"] == 1100000, a100
        assert report["config"]["seed"] == 7, report["config"]  # sim: is the simulator's


def test_both_refuse_the_same_bad_values_naming_the_key():
    cases = [
        ("pools:\n  - name: p\n    gpus_per_node: 99\n", "pools[0].gpus_per_node",
         "must be from 0 to 64, got 99"),
        ("pools:\n  - name: p\n    nodes: 2\n    max_nodes: 3\n", "pools[0].nodes",
         "is for fixed-size pools"),
        ("pools:\n  - gpu: V100\n", "pools[0].name", "is required"),
        ("pools:\n  - name: p\n    max_nodes: 8.0\n", "pools[0].max_nodes",
         "must be an integer, got '8.0'"),
        ("pools:\n  - name: p\n    price_per_node_hour: 1.0000001\n",
         "pools[0].price_per_node_hour", "at most 6 decimals"),
        # Numbers and booleans as the server reads them: YAML's 0x8, +3 and True are text.
        ("pools:\n  - name: p\n    gpus_per_node: 0x8\n", "pools[0].gpus_per_node",
         "must be an integer, got '0x8'"),
        ("pools:\n  - name: p\n    max_nodes: +3\n", "pools[0].max_nodes",
         "must be an integer, got '+3'"),
        ("pools:\n  - name: p\n    max_nodes: 3\n    predictive: True\n",
         "pools[0].predictive", "must be true or false, got 'True'"),
        ("scheduler:\n  backfill: TRUE\n", "scheduler.backfill", "must be true or false"),
        ("scheduler:\n  backfill: true\n  backfill: false\n", "backfill", "duplicate key"),
        # Known to the simulator but not simulated: still checked as the server does.
        ("scheduler:\n  max_gpu_utilization_pct: 150\n", "scheduler.max_gpu_utilization_pct",
         "from 0 to 100"),
    ]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tide.yaml")
        for text, key, reason in cases:
            with open(path, "w") as f:
                f.write(text)
            p = check_config(path)
            assert p.returncode == 2, (text, p.stdout, p.stderr)
            assert key in p.stderr and reason in p.stderr, (text, p.stderr)
            s = sim(path)
            assert s.returncode == 2, (text, s.stderr)
            assert key in s.stderr and reason in s.stderr, (text, s.stderr)
        # The simulator's old spellings point to tide.yaml's.
        with open(path, "w") as f:
            f.write("pools:\n  - name: p\n    gpu_model: V100\n")
        s = sim(path)
        assert s.returncode == 2 and "pools[0].gpu_model: is spelled gpu" in s.stderr, s.stderr
        with open(path, "w") as f:
            f.write("policy: las\n")
        s = sim(path)
        assert s.returncode == 2 and "write it as scheduler.policy" in s.stderr, s.stderr


def test_a_pool_tried_in_the_simulator_runs_jobs_on_a_server():
    path = os.path.join(ROOT, "tests", "data", "sim", "elastic.yaml")
    s = run("sim", "--trace", os.path.join(ROOT, "tests", "data", "sim", "elastic.csv"),
            "--format", "csv", "--config", path, "--quiet", "--json")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["elastic"]["pools"][0]["created"] == 2, s.stdout
    with open(path) as f:
        text = f.read()
    with Cluster(agents=0, config=text) as c:
        pools = c.api("GET", "/v1/pools")["pools"]
        assert len(pools) == 1, pools
        p = pools[0]
        assert (p["name"], p["gpu"], p["gpus_per_node"], p["gpu_memory_mib"]) == \
            ("burst", "V100", 2, 16384), p
        assert p["price_per_node_hour_micros"] == 3600000, p
        job = c.submit(gpus=2, gpu_model="V100", command=["true"])
        final = c.wait_final([job["id"]], timeout=90)
        assert final[job["id"]]["state"] == "succeeded", final
        nodes = [n for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "burst"]
        assert len(nodes) == 1, nodes


if __name__ == "__main__":
    run_tests([
        test_every_sim_example_and_fixture_starts_a_server,
        test_the_yaml_examples_in_the_docs_work_in_both,
        test_the_servers_form_runs_in_the_simulator_with_the_same_pools,
        test_both_refuse_the_same_bad_values_naming_the_key,
        test_a_pool_tried_in_the_simulator_runs_jobs_on_a_server,
    ])
