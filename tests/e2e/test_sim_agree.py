"""The simulator is the real scheduler: a short trace replayed by `tide sim`
and the same jobs run on a real server with two agents start in the same
order on the same nodes. Durations are real seconds and the trace keeps
every finish at least two seconds from any other event, so start and
heartbeat latency on a loaded machine (a start late by over a second was
seen with the full suite on 2 cores) cannot reorder what the two see. The
simulator runs the server's defaults (priority, binpack, backfill: a job
blocked behind jobs that give no runtime has their node held for it)."""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, Cluster, run_tests  # noqa: E402

# (gpus, seconds): all submitted at once onto two nodes of two GPUs.
TRACE = [(1, 6), (2, 24), (1, 12), (2, 6), (1, 8), (1, 4)]


def simulate(workdir):
    trace = os.path.join(workdir, "trace.csv")
    with open(trace, "w") as f:
        f.write("submit_time,duration,gpus\n")
        for gpus, secs in TRACE:
            f.write(f"0,{secs},{gpus}\n")
    out = os.path.join(workdir, "sim")
    subprocess.run([TIDE, "sim", "--trace", trace, "--format", "csv", "--nodes", "2",
                    "--gpus-per-node", "2", "--placement", "binpack", "--policy", "priority",
                    "--backfill", "--no-oracle", "--quiet", "--out", out], check=True,
                   capture_output=True)
    with open(os.path.join(out, "jobs.csv")) as f:
        rows = list(csv.DictReader(f))
    return {int(r["job"]): (float(r["start_s"]), int(r["node"])) for r in rows}


def order_of(starts):
    return [job for job, _ in sorted(starts.items(), key=lambda kv: (kv[1][0], kv[0]))]


def test_sim_and_a_real_cluster_start_the_same_jobs_in_the_same_order_on_the_same_nodes():
    with tempfile.TemporaryDirectory() as d:
        sim = simulate(d)
    with Cluster(agents=2, fake_gpus="2xA100:80GB") as c:
        ids = [c.submit(name=f"trace-{i + 1}", command=["sleep", str(secs)], gpus=gpus)["id"]
               for i, (gpus, secs) in enumerate(TRACE)]
        final = c.wait_final(ids, timeout=90)
        # Placement order is the order of the scheduler's decisions (its events);
        # when agents report "running" depends on their heartbeats.
        placed = [e["job_id"] for e in c.api("GET", "/v1/events")["events"]
                  if e["kind"] == "job_starting"]
    assert all(final[j]["state"] == "succeeded" for j in ids), final
    real_order = [ids.index(j) + 1 for j in placed]
    real_nodes = {i + 1: int(final[j]["node"].split("-")[1]) for i, j in enumerate(ids)}
    assert real_order == order_of(sim), (real_order, order_of(sim), sim)
    assert real_nodes == {j: n for j, (_, n) in sim.items()}, (real_nodes, sim)


if __name__ == "__main__":
    run_tests([test_sim_and_a_real_cluster_start_the_same_jobs_in_the_same_order_on_the_same_nodes])
