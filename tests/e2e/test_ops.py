"""End to end: operator commands (drain, undrain, delete nodes; hold, release,
requeue jobs; filters of `tide nodes`; `tide top`; `tide logs -f` on a pending
job) through the real CLI against a real server and agents."""
import json
import os
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402


def gate_command(c, name):
    """A command that runs until the file `name` appears in the cluster's dir."""
    path = os.path.join(c.dir, name)
    return ["sh", "-c", f"while [ ! -f {path} ]; do sleep 0.1; done; echo passed {name}"], path


def open_gate(path):
    with open(path, "w"):
        pass


def passes_go_by(c, n=3):
    """Waits until the scheduler has run n more passes (from /metrics)."""
    def passes():
        for line in c.api("GET", "/metrics").splitlines():
            if line.startswith("tide_scheduler_passes_total "):
                return float(line.split()[1])
        raise AssertionError("no tide_scheduler_passes_total in /metrics")
    start = passes()
    wait_until(lambda: passes() >= start + n, 20, what=f"{n} scheduler passes")


def test_drained_node_gets_no_new_work_keeps_its_job_and_stays_drained_after_restart():
    with Cluster(agents=1) as c:
        cmd, gate = gate_command(c, "a")
        a = c.submit(command=cmd, gpus=1)
        c.wait_state(a["id"], "running")
        p = c.cli("nodes", "drain", "node-1", "--reason", "disk swap", check=True)
        assert "draining" in p.stdout and "1 job(s) still running" in p.stdout, p.stdout
        node = c.node("node-1")
        assert node["state"] == "draining" and node["drain_reason"] == "disk swap", node
        b = c.submit(command=["true"], gpus=1)
        passes_go_by(c)
        assert c.job(b["id"])["state"] == "pending"
        open_gate(gate)
        assert c.wait_final([a["id"]])[a["id"]]["state"] == "succeeded"
        wait_until(lambda: "drained" in c.cli("nodes", check=True).stdout, 20, what="drained")
        c.kill_server(signal.SIGKILL)
        c.start_server()
        passes_go_by(c)
        assert c.node("node-1")["drain_reason"] == "disk swap"
        assert c.job(b["id"])["state"] == "pending"
        p = c.cli("nodes", "undrain", "node-1", check=True)
        assert "ready" in p.stdout, p.stdout
        assert c.wait_final([b["id"]])[b["id"]]["state"] == "succeeded"
        events = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert "node_drained" in events and "node_undrained" in events, events


def test_drain_needs_the_admin_token_and_names_unknown_nodes():
    with Cluster(agents=1) as c:
        user = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["default"]}, expect=201)["token"]
        status, body = c.request("POST", "/v1/nodes/node-1/drain", {}, token=user)
        assert status == 403, body
        status, body = c.request("POST", "/v1/nodes/nope/drain", {})
        assert status == 404 and body["error"]["field"] == "node", body
        status, body = c.request("POST", "/v1/nodes/node-1/drain", {"reason": 5})
        assert status == 400 and body["error"]["field"] == "reason", body
        p = c.cli("nodes", "undrain", "node-1")
        assert p.returncode == 1 and "not drained" in p.stderr, p.stderr


def test_delete_refuses_a_busy_node_unless_forced_and_force_requeues_without_a_retry():
    with Cluster(agents=2) as c:
        cmd, gate = gate_command(c, "d")
        j = c.submit(command=cmd, gpus=4, retries=0)
        running = c.wait_state(j["id"], "running")
        busy = running["node"]
        other = "node-2" if busy == "node-1" else "node-1"
        p = c.cli("nodes", "delete", busy)
        assert p.returncode == 1 and "force" in p.stderr, p.stderr
        assert c.node(busy) is not None
        # The agent is stopped first, as the docs say, so it does not register again.
        c.kill_agent(busy)
        p = c.cli("nodes", "delete", busy, "--force", check=True)
        assert "1 job(s) requeued" in p.stdout, p.stdout
        assert c.node(busy) is None
        assert busy not in c.cli("nodes", "--all", check=True).stdout
        # not before the node timeout and kill grace since it was last heard
        wait_until(lambda: "may still run on a deleted node" in
                   (c.job(j["id"]).get("pending_reason") or ""), 10,
                   what="the job waiting for the deleted node's task to have stopped")
        open_gate(gate)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        # retries 0: a counted failure would have ended it failed
        assert done["state"] == "succeeded" and done["node"] == other, done
        c.kill_server(signal.SIGKILL)
        c.start_server()
        assert c.node(busy) is None and c.node(other) is not None


def test_a_force_deleted_nodes_job_still_waits_for_it_after_a_server_restart():
    # The wait (node timeout and kill grace since the node was last heard)
    # is kept with the job: a restarted server must not start it at once
    # while the deleted node's agent may still run it.
    with Cluster(agents=2, kill_grace_s=30) as c:
        cmd, gate = gate_command(c, "r")
        j = c.submit(command=cmd, gpus=4)
        busy = c.wait_state(j["id"], "running")["node"]
        c.kill_agent(busy)
        c.cli("nodes", "delete", busy, "--force", check=True)
        c.kill_server(signal.SIGKILL)
        c.start_server()
        time.sleep(1)  # passes run: one would have started it
        job = c.job(j["id"])
        assert job["state"] == "pending", job
        assert "may still run on a deleted node" in job.get("pending_reason", ""), job
        open_gate(gate)


def test_delete_of_an_idle_node_needs_no_force():
    with Cluster(agents=2) as c:
        c.kill_agent("node-2")
        p = c.cli("nodes", "delete", "node-2", check=True)
        assert "0 job(s) requeued" in p.stdout, p.stdout
        assert [n["name"] for n in c.api("GET", "/v1/nodes")["nodes"]] == ["node-1"]


def test_nodes_filters_by_state_and_pool():
    with Cluster(agents=2) as c:
        c.cli("nodes", "drain", "node-2", check=True)
        out = c.cli("nodes", "--state", "drained", check=True).stdout
        assert "node-2" in out and "node-1" not in out, out
        out = c.cli("nodes", "--state", "ready", check=True).stdout
        assert "node-1" in out and "node-2" not in out, out
        listed = json.loads(c.cli("nodes", "--state", "draining", "--json", check=True).stdout)
        assert [n["name"] for n in listed["nodes"]] == ["node-2"], listed
        out = c.cli("nodes", "--pool", "-", check=True).stdout
        assert "node-1" in out and "node-2" in out, out
        out = c.cli("nodes", "--pool", "h200", check=True).stdout
        assert "node-1" not in out, out
        p = c.cli("nodes", "--state", "sleepy")
        assert p.returncode == 2 and "--state" in p.stderr, p.stderr


POOL = """pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 1
    boot_timeout_s: 60
    price_per_node_hour: 3.60
    scale_down_window_s: 1
    scale_down_utilization: 0
    cooldown_s: 0
"""


def test_released_pool_nodes_are_hidden_unless_all_is_given():
    with Cluster(agents=0, config=POOL) as c:
        j = c.submit(command=["true"], gpus=1)
        c.wait_final([j["id"]], timeout=90)
        wait_until(lambda: [n for n in c.api("GET", "/v1/nodes")["nodes"]
                            if n["state"] == "released"], 60, 0.25, what="pool node released")
        pooled = c.api("GET", "/v1/nodes")["nodes"][0]["name"]
        c.start_agent("hand-1")
        names = lambda *args: [l.split()[0] for l in c.cli("nodes", *args, check=True).stdout.splitlines()[1:]]
        assert names() == ["hand-1"], names()
        assert sorted(names("--all")) == sorted([pooled, "hand-1"]), names("--all")
        assert names("--state", "released") == [pooled]
        assert names("--pool", "elastic", "--all") == [pooled]
        assert names("--pool", "-", "--all") == ["hand-1"]
        listed = json.loads(c.cli("nodes", "--json", check=True).stdout)["nodes"]
        assert [n["name"] for n in listed] == ["hand-1"], listed
        # A pool's node is its autoscaler's to drain.
        status, body = c.request("POST", f"/v1/nodes/{pooled}/drain", {})
        assert status == 409 and "pool" in body["error"]["message"], body


def test_held_job_never_starts_until_released_and_the_hold_survives_a_restart():
    with Cluster(agents=1) as c:
        cmd, gate = gate_command(c, "blocker")
        blocker = c.submit(command=cmd, gpus=4)
        c.wait_state(blocker["id"], "running")
        j = c.submit(command=["echo", "ran"], gpus=1)  # waits: no GPU is free
        p = c.cli("hold", str(j["id"]), "--reason", "waiting for data", check=True)
        open_gate(gate)
        c.wait_final([blocker["id"]])
        assert "held job" in p.stdout, p.stdout
        passes_go_by(c)
        job = c.job(j["id"])
        assert job["state"] == "pending" and job["held"] is True, job
        assert job["hold_reason"] == "waiting for data", job
        assert job["pending_reason"] == "held: waiting for data", job
        assert "held" in c.cli("show", str(j["id"]), check=True).stdout
        c.kill_server(signal.SIGKILL)
        c.start_server()
        passes_go_by(c)
        job = c.job(j["id"])
        assert job["state"] == "pending" and job["held"] is True, job
        c.cli("release", str(j["id"]), check=True)
        done = c.wait_final([j["id"]])[j["id"]]
        assert done["state"] == "succeeded" and done["held"] is False, done
        p = c.cli("release", str(j["id"]))
        assert p.returncode == 1 and "finished" in p.stderr, p.stderr


def test_hold_is_refused_for_a_running_job_and_another_projects_job():
    with Cluster(agents=1) as c:
        cmd, gate = gate_command(c, "h")
        j = c.submit(command=cmd, gpus=1, project="vision")
        c.wait_state(j["id"], "running")
        status, body = c.request("POST", f"/v1/jobs/{j['id']}/hold", {})
        assert status == 409 and "pending" in body["error"]["message"], body
        other = c.api("POST", "/v1/tokens", {"name": "bob", "projects": ["nlp"]}, expect=201)["token"]
        status, body = c.request("POST", f"/v1/jobs/{j['id']}/requeue", {}, token=other)
        assert status == 404, body
        status, body = c.request("POST", f"/v1/jobs/{j['id']}/hold", {"why": "x"})
        assert status == 400 and body["error"]["field"] == "why", body
        open_gate(gate)
        c.wait_final([j["id"]])


def test_requeued_job_runs_again_without_using_a_retry():
    with Cluster(agents=1) as c:
        marker = os.path.join(c.dir, "attempts")
        gate = os.path.join(c.dir, "r")
        script = (f'echo "$TIDE_ATTEMPT" >> {marker}; '
                  f'while [ ! -f {gate} ]; do sleep 0.1; done; echo finished')
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=0)
        c.wait_state(j["id"], "running")
        wait_until(lambda: os.path.exists(marker), 20, what="first attempt started")
        p = c.cli("requeue", str(j["id"]), "--reason", "kernel update", check=True)
        assert "requeueing job" in p.stdout, p.stdout
        wait_until(lambda: c.job(j["id"])["attempt"] == 2 and c.job(j["id"])["state"] == "running",
                   30, what="second attempt running")
        open_gate(gate)
        done = c.wait_final([j["id"]])[j["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 2, done
        with open(marker) as f:
            assert f.read().split() == ["1", "2"]
        kinds = [(e["kind"], e["message"]) for e in
                 c.api("GET", f"/v1/events?job={j['id']}")["events"]]
        assert any(k == "job_preempted" and "requeued: kernel update" in m for k, m in kinds), kinds
        p = c.cli("requeue", str(j["id"]))
        assert p.returncode == 1, p.stderr


def test_logs_follow_on_a_pending_job_says_why_it_waits_then_follows_it():
    with Cluster(agents=1) as c:
        cmd, gate = gate_command(c, "lg")
        blocker = c.submit(command=cmd, gpus=4)
        c.wait_state(blocker["id"], "running")
        j = c.submit(command=["sh", "-c", "echo first; echo second"], gpus=1)
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        p = subprocess.Popen([os.environ["TIDE_BIN"], "logs", "-f", str(j["id"])], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([p.stderr], [], [], 20)
            assert ready, "tide logs -f said nothing about the pending job"
            first = p.stderr.readline()
            assert f"job {j['id']} is pending" in first and "waiting for it to start" in first, first
            assert "GPU" in first, first  # the scheduler's reason: no GPU free
            open_gate(gate)
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err
        assert out.splitlines()[-2:] == ["first", "second"], out
        assert f"job {j['id']} is " in err and "on node-1" in err, err
        assert c.job(j["id"])["state"] == "succeeded"


def test_a_requeue_uses_no_retry_even_after_a_server_restart():
    with Cluster(agents=1) as c:
        g1, g2 = os.path.join(c.dir, "g1"), os.path.join(c.dir, "g2")
        # Attempt 1 waits to be requeued; attempt 2 fails once its gate opens; attempt 3 succeeds.
        script = (f'case "$TIDE_ATTEMPT" in 1) while [ ! -f {g1} ]; do sleep 0.1; done;; '
                  f'2) while [ ! -f {g2} ]; do sleep 0.1; done; exit 1;; esac; echo third')
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=1)
        c.wait_state(j["id"], "running")
        c.cli("requeue", str(j["id"]), check=True)
        wait_until(lambda: (x := c.job(j["id"]))["attempt"] == 2 and x["state"] == "running", 30,
                   what="attempt 2 running")
        c.kill_server(signal.SIGKILL)
        c.start_server()
        open_gate(g2)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        # One failure with retries 1 is retried: the requeue counted as no attempt of its own.
        assert done["state"] == "succeeded" and done["attempt"] == 3, done


def test_top_once_shows_the_queue_nodes_running_and_waiting_jobs():
    with Cluster(agents=1) as c:
        cmd, gate = gate_command(c, "top")
        blocker = c.submit(command=cmd, gpus=4, name="blocker")
        c.wait_state(blocker["id"], "running")
        waiting = c.submit(command=["true"], gpus=2, name="second")
        held = c.submit(command=["true"], gpus=1, name="third")
        c.cli("hold", str(held["id"]), "--reason", "after the demo", check=True)
        out = c.cli("top", "--once", check=True).stdout
        assert "\033[" not in out, out  # one frame for scripts: no screen clearing
        assert "jobs:  1 running, 0 starting, 2 pending (1 held)" in out, out
        assert "gpus:  4/4 allocated" in out, out
        assert "nodes: 1 ready, 0 draining, 0 lost" in out, out
        lines = out.splitlines()
        running = lines[lines.index(next(l for l in lines if l.startswith("RUNNING"))) + 1]
        assert running.split()[:2] == [str(blocker["id"]), "blocker"], out
        pending = [l for l in lines if l.split()[:1] in ([str(waiting["id"])], [str(held["id"])])]
        assert len(pending) == 2 and "held: after the demo" in out, out
        p = c.cli("top", "--interval", "0")
        assert p.returncode == 2 and "--interval" in p.stderr, p.stderr
        open_gate(gate)


def test_top_lists_running_jobs_by_start_and_a_gangs_gpus_whole():
    # the running list followed submission order, and a gang's GPUS column
    # counted its first node's GPUs alone
    with Cluster(agents=3, fake_gpus="2xH200:141GB") as c:
        late = c.submit(command=["sleep", "60"], gpus=1, name="first-started")
        c.wait_state(late["id"], "running")
        time.sleep(1.1)
        gang = c.submit(command=["sleep", "60"], gpus=4, nodes=2, name="gang")
        c.wait_state(gang["id"], "running")
        out = c.cli("top", "--once", check=True).stdout
        lines = out.splitlines()
        at = lines.index(next(l for l in lines if l.startswith("RUNNING")))
        rows = [l.split() for l in lines[at + 1:at + 3]]
        assert [r[0] for r in rows] == [str(late["id"]), str(gang["id"])], out
        assert rows[1][4] == "4", out  # 2 GPUs on each of 2 nodes: 4 in all
        for j in (late, gang):
            c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_top_shows_the_oldest_waiting_jobs_past_a_thousand():
    # top read the newest 1,000 pending jobs, so past that its first waiting
    # jobs were the 1,000th newest, not the oldest
    with Cluster(agents=0) as c:
        first = c.submit(command=["true"], gpus=1, name="oldest")
        out = c.api("POST", "/v1/jobs:batch",
                    {"jobs": [{"command": ["true"], "gpus": 1, "array": 1100}]})
        assert out["created"] == 1, out
        top = c.cli("top", "--once", check=True).stdout
        assert "1000+ pending" in top, top
        lines = top.splitlines()
        at = lines.index(next(l for l in lines if l.startswith("PENDING")))
        assert lines[at + 1].split()[:2] == [str(first["id"]), "oldest"], top
        assert lines[at + 2].split()[0] == str(out["jobs"][0]["ids"][0]), top


def test_top_redraws_until_q_is_pressed():
    with Cluster(agents=1) as c:
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        p = subprocess.Popen([os.environ["TIDE_BIN"], "top", "--interval", "1"], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            frames = 0
            deadline = time.monotonic() + 30
            while frames < 2 and time.monotonic() < deadline:
                ready, _, _ = select.select([p.stdout], [], [], 5)
                if ready and p.stdout.readline().startswith("tide top"):
                    frames += 1
            assert frames == 2, "tide top did not redraw"
            assert p.poll() is None, p.stderr.read()
            p.stdin.write("q")
            p.stdin.flush()
            p.wait(15)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, p.stderr.read()


def usage_by(c, by, token=None):
    return c.api("GET", f"/v1/usage?by={by}", token=token)["rows"]


def test_usage_meters_nodes_joined_by_hand_per_user_and_keeps_it_across_a_restart():
    with Cluster(agents=1) as c:
        alice = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["default"]},
                      expect=201)["token"]
        bob = c.api("POST", "/v1/tokens", {"name": "bob", "projects": ["vision"]},
                    expect=201)["token"]
        cmd_a, gate_a = gate_command(c, "ua")
        cmd_b, gate_b = gate_command(c, "ub")
        a = c.submit(token=alice, command=cmd_a, gpus=2)
        b = c.submit(token=bob, command=cmd_b, gpus=1, project="vision")
        c.wait_state(a["id"], "running")
        c.wait_state(b["id"], "running")

        def both_metered():
            rows = {r["user"]: r for r in usage_by(c, "user") if not r["idle"]}
            return rows if all(rows.get(u, {}).get("gpu_hours", 0) > 0 for u in ("alice", "bob")) else None
        rows = wait_until(both_metered, 30, 0.5, what="usage of alice and bob")
        assert rows["alice"]["cost_micros"] == 0, rows
        open_gate(gate_a)
        open_gate(gate_b)
        c.wait_final([a["id"], b["id"]])
        pools = {r["pool"] for r in usage_by(c, "pool")}
        assert pools == {"(static)"}, pools
        out = c.cli("usage", "--by", "user,project", check=True).stdout
        assert "alice" in out and "bob" in out and "USER" in out, out
        # A project-limited token sees only its own project's rows.
        mine = usage_by(c, "user", token=bob)
        assert {r["user"] for r in mine} == {"bob"}, mine
        before = {r["user"]: r["gpu_hours"] for r in usage_by(c, "user") if not r["idle"]}
        c.kill_server(signal.SIGTERM)
        c.start_server()
        after = {r["user"]: r["gpu_hours"] for r in usage_by(c, "user") if not r["idle"]}
        for user in ("alice", "bob"):
            assert after[user] >= before[user] > 0, (before, after)
        p = c.cli("usage", "--by", "colour")
        assert p.returncode != 0 and "user" in p.stderr, p.stderr


if __name__ == "__main__":
    run_tests([
        test_drained_node_gets_no_new_work_keeps_its_job_and_stays_drained_after_restart,
        test_drain_needs_the_admin_token_and_names_unknown_nodes,
        test_delete_refuses_a_busy_node_unless_forced_and_force_requeues_without_a_retry,
        test_a_force_deleted_nodes_job_still_waits_for_it_after_a_server_restart,
        test_delete_of_an_idle_node_needs_no_force,
        test_nodes_filters_by_state_and_pool,
        test_released_pool_nodes_are_hidden_unless_all_is_given,
        test_held_job_never_starts_until_released_and_the_hold_survives_a_restart,
        test_hold_is_refused_for_a_running_job_and_another_projects_job,
        test_requeued_job_runs_again_without_using_a_retry,
        test_logs_follow_on_a_pending_job_says_why_it_waits_then_follows_it,
        test_a_requeue_uses_no_retry_even_after_a_server_restart,
        test_top_once_shows_the_queue_nodes_running_and_waiting_jobs,
        test_top_lists_running_jobs_by_start_and_a_gangs_gpus_whole,
        test_top_shows_the_oldest_waiting_jobs_past_a_thousand,
        test_top_redraws_until_q_is_pressed,
        test_usage_meters_nodes_joined_by_hand_per_user_and_keeps_it_across_a_restart,
    ])
