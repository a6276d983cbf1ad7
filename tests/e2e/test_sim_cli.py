"""`tide sim`'s command line: flags refused with a reason rather than
ignored or left to crash, and the files and labels a run writes. No server:
each test runs the binary on a small trace in a temporary directory."""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, run_tests  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data", "sim")


def sim(*args):
    return subprocess.run([TIDE, "sim", *args], capture_output=True, text=True, timeout=120)


def test_an_arrival_rate_too_low_for_100_years_is_a_usage_error():
    # At 1e-15 jobs per hour the arrival times overflowed and the report crashed.
    s = sim("--synthetic", "3", "--arrival-rate", "1e-15", "--quiet", "--json")
    assert s.returncode == 2, (s.returncode, s.stderr)
    assert "--arrival-rate" in s.stderr and "100 years" in s.stderr, s.stderr
    assert "give at least 2.28e-06" in s.stderr, s.stderr
    # The lowest rate it names is taken.
    s = sim("--synthetic", "3", "--arrival-rate", "2.3e-06", "--quiet", "--json")
    assert s.returncode == 0, s.stderr


def test_a_tide_yaml_simulates_the_scheduler_the_server_runs_with_it():
    """Keys a tide.yaml leaves out take the server's defaults in the
    simulator too (they were fifo, loadaware and no backfill, against the
    server's priority, binpack and backfill on: a file tried in the
    simulator ran a different scheduler once served). Flags still win."""
    pool = "pools:\n  - name: p\n    gpu: H200\n    gpus_per_node: 8\n    max_nodes: 2\n"
    with tempfile.TemporaryDirectory() as tmp:
        for n, scheduler in enumerate(("", "scheduler:\n  policy: las\n",
                                        "scheduler:\n  placement: spread\n  backfill: false\n")):
            path = os.path.join(tmp, f"t{n}.yaml")
            with open(path, "w") as f:
                f.write(scheduler + pool)
            s = sim("--config", path, "--synthetic", "20", "--quiet", "--json")
            assert s.returncode == 0, s.stderr
            got = json.loads(s.stdout)["config"]
            check = subprocess.run([TIDE, "server", "--config", path, "--check-config"],
                                   capture_output=True, text=True, timeout=60)
            assert check.returncode == 0, check.stderr
            served = (f"policy {got['policy']}, placement {got['placement']}, "
                      f"backfill {'on' if got['backfill'] else 'off'}")
            assert served in check.stdout, (scheduler, served, check.stdout)
        s = sim("--config", path, "--synthetic", "20", "--quiet", "--json", "--policy", "fifo",
                "--backfill")
        got = json.loads(s.stdout)["config"]
        assert (got["policy"], got["placement"], got["backfill"]) == ("fifo", "spread", True), got
    # without a config the replay defaults stay: fifo, loadaware, no backfill
    got = json.loads(sim("--synthetic", "20", "--quiet", "--json").stdout)["config"]
    assert (got["policy"], got["placement"], got["backfill"]) == ("fifo", "loadaware", False), got


def synthetic_rate(report):
    """The arrivals per hour a synthetic run's trace.source says it used."""
    source = report["trace"]["source"]
    return float(source.split(", ")[-1].split()[0])


def test_synthetic_load_on_an_elastic_pool_is_sized_from_max_nodes_and_reported():
    # tests/data/sim/elastic.yaml: 0 to 2 nodes of 2 GPUs. The default load
    # was sized from nodes (0), reported as 0 arrivals/h and run at 60.
    with tempfile.TemporaryDirectory() as d:
        s = sim("--synthetic", "200", "--config", os.path.join(DATA, "elastic.yaml"),
                "--quiet", "--json", "--out", d)
        assert s.returncode == 0, s.stderr
        rate = synthetic_rate(json.loads(s.stdout))
        with open(os.path.join(d, "jobs.csv")) as f:
            last_submit_h = max(float(r["submit_s"]) for r in csv.DictReader(f)) / 3600
    fixed = sim("--synthetic", "200", "--nodes", "2", "--gpus-per-node", "2", "--quiet", "--json")
    assert fixed.returncode == 0, fixed.stderr
    assert rate > 0 and rate == synthetic_rate(json.loads(fixed.stdout)), (rate, fixed.stdout[:300])
    # The rate reported is the one the arrivals were drawn at (199 gaps).
    assert 0.7 < last_submit_h * rate / 199 < 1.3, (last_submit_h, rate)


def test_nodes_and_price_are_refused_for_an_elastic_pool_naming_its_keys():
    # They set fields an elastic pool never reads: the run went on as if
    # they had not been given.
    base = ("--trace", os.path.join(DATA, "elastic.csv"), "--format", "csv",
            "--config", os.path.join(DATA, "elastic.yaml"), "--quiet", "--json")
    for flag, value, key in (("--nodes", "50", "max_nodes"),
                             ("--price", "100", "price_per_node_hour")):
        s = sim(*base, flag, value)
        assert s.returncode == 2, (flag, s.returncode, s.stdout[:200])
        assert flag in s.stderr and "elastic" in s.stderr and key in s.stderr, s.stderr
    # An elastic pool without its own node price is priced by --price (2 GPUs a node).
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "unpriced.yaml")
        with open(os.path.join(DATA, "elastic.yaml")) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace("    price_per_node_hour: 3.60\n", ""))
        unpriced = list(base)
        unpriced[unpriced.index("--config") + 1] = config
        s = sim(*unpriced, "--price", "1.80")
        assert s.returncode == 0, s.stderr
        pool = json.loads(s.stdout)["config"]["pools"][0]
        assert pool["price_per_node_hour_micros"] == 3600000, pool
    # The pool's shape still comes from the flags.
    s = sim(*base, "--gpu-model", "A100")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["config"]["pools"][0]["gpu_model"] == "A100", s.stdout[:400]


if __name__ == "__main__":
    run_tests([
        test_a_tide_yaml_simulates_the_scheduler_the_server_runs_with_it,test_an_arrival_rate_too_low_for_100_years_is_a_usage_error,
               test_synthetic_load_on_an_elastic_pool_is_sized_from_max_nodes_and_reported,
               test_nodes_and_price_are_refused_for_an_elastic_pool_naming_its_keys])
