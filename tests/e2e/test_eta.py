"""End to end: start-time ETAs of pending jobs in the API, `tide jobs` and `tide show`."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402


def eta_of(c, job_id):
    j = c.job(job_id)
    eta = j.get("eta") or {}
    return eta if eta.get("start_time") is not None else None


def test_pending_jobs_behind_a_max_runtime_job_show_an_eta_and_its_basis():
    with Cluster(agents=1, fake_gpus="4xH200:141GB") as c:
        a = c.submit(command=["sleep", "120"], gpus=4, max_runtime=40)
        a = c.wait_state(a["id"], "running")
        b = c.submit(command=["true"], gpus=4, max_runtime=10)
        d = c.submit(command=["true"], gpus=4, max_runtime=20)
        eb = wait_until(lambda: eta_of(c, b["id"]), 15, what="an ETA for the job behind")
        ed = wait_until(lambda: eta_of(c, d["id"]), 15, what="an ETA for the job behind that")
        # b holds the backfill reservation for when a's max_runtime ends; d
        # comes after b's own max_runtime. Starting and the reservation are
        # counted from when the server placed a, which precedes start_time.
        a_start = a["start_time"]
        assert eb["basis"] == "reservation", eb
        assert abs(eb["start_time"] - (a_start + 40)) < 3, (eb, a_start)
        assert ed["basis"] == "max_runtime", ed
        assert abs(ed["start_time"] - (eb["start_time"] + 10)) < 1, (ed, eb)
        assert 0 < ed["in_s"] <= 52, ed
        # a running job has no eta
        assert "eta" not in c.job(a["id"]), c.job(a["id"])

        table = c.cli("jobs", check=True).stdout
        header = table.splitlines()[0].split()
        assert "ETA" in header, table
        row = next(line for line in table.splitlines() if line.split()[0] == str(d["id"]))
        assert " in " in row, table
        shown = c.cli("show", str(d["id"]), check=True).stdout
        eta_line = next(line for line in shown.splitlines() if line.startswith("eta:"))
        assert "in " in eta_line and "basis max_runtime" in eta_line, shown
        # the waiting ones first: once a is gone they start, and end at once
        for j in (d, b, a):
            c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_eta_from_the_runtimes_learned_from_a_project():
    with Cluster(agents=1, fake_gpus="2xH200:141GB") as c:
        quick = [c.submit(command=["sleep", "1"], gpus=1, project="vision") for _ in range(3)]
        c.wait_final([q["id"] for q in quick], 30)
        long = c.submit(command=["sleep", "120"], gpus=2, project="vision")
        c.wait_state(long["id"], "running")
        waiting = c.submit(command=["true"], gpus=2, project="other")
        eta = wait_until(lambda: eta_of(c, waiting["id"]), 15, what="an ETA for the waiting job")
        # the running job has no runtime bound: its end comes from what its
        # project's jobs ran, and the reservation has no start of its own
        assert eta["basis"] == "estimate:project", eta
        assert eta["start_time"] >= time.time() - 2, eta
        reservation = c.job(waiting["id"])["reservation"]
        assert reservation == {"node": "node-1", "start_time": None}, reservation
        c.api("DELETE", f"/v1/jobs/{waiting['id']}")
        c.api("DELETE", f"/v1/jobs/{long['id']}")


def test_a_restarted_server_learns_runtimes_again_from_its_store():
    with Cluster(agents=1, fake_gpus="2xH200:141GB") as c:
        quick = [c.submit(command=["sleep", "1"], gpus=1, project="vision") for _ in range(3)]
        c.wait_final([q["id"] for q in quick], 30)
        long = c.submit(command=["sleep", "120"], gpus=2, project="vision")
        c.wait_state(long["id"], "running", 30)
        # newer than the runs, more pending jobs than the server reads back
        # (5,000): they must not hide the runs it learns from
        deep = {"command": ["true"], "gpus": 2, "project": "deep"}
        status, out = c.request("POST", "/v1/jobs:batch", {"jobs": [deep] * 5001})
        assert status in (200, 201), (status, str(out)[:300])
        first = min(j["id"] for j in out["jobs"])
        c.kill_server(signal.SIGTERM)
        c.start_server()
        # the first of them starts when the vision job ends: when vision's
        # learned runs say, not at a default guess
        eta = wait_until(lambda: eta_of(c, first), 15, what="an ETA for the first waiting job")
        assert eta["basis"] == "estimate:project", eta
        c.api("DELETE", f"/v1/jobs/{long['id']}")


CAPPED = """
queues:
  - name: default
  - name: capped
    max_running_jobs: 1
"""


def test_a_job_its_queue_cap_holds_gets_the_end_of_the_running_one():
    with Cluster(agents=1, fake_gpus="4xH200:141GB", config=CAPPED) as c:
        first = c.submit(command=["sleep", "120"], gpus=1, queue="capped", max_runtime=60)
        first = c.wait_state(first["id"], "running")
        second = c.submit(command=["true"], gpus=1, queue="capped", max_runtime=10)
        eta = wait_until(lambda: eta_of(c, second["id"]), 15, what="an ETA for the capped job")
        # three GPUs are free, but the queue runs one job at a time: the
        # second starts when the first's max_runtime ends, not now
        assert c.job(second["id"])["state"] == "pending", c.job(second["id"])
        assert eta["basis"] == "max_runtime", eta
        assert abs(eta["start_time"] - (first["start_time"] + 60)) < 3, (eta, first)
        assert eta["in_s"] > 30, eta
        for j in (second, first):
            c.api("DELETE", f"/v1/jobs/{j['id']}")


if __name__ == "__main__":
    run_tests([
        test_pending_jobs_behind_a_max_runtime_job_show_an_eta_and_its_basis,
        test_eta_from_the_runtimes_learned_from_a_project,
        test_a_restarted_server_learns_runtimes_again_from_its_store,
        test_a_job_its_queue_cap_holds_gets_the_end_of_the_running_one,
    ])
