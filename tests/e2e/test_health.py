"""End to end: GPU health with fake GPUs and real agents. Faults are injected
through each agent's --fake-fault-file; the server drains, requeues (no retry
used), fails nodes after repeated faults, and a pool replaces a failed node.
Health probes (--health-command) drain a node while they fail."""
import os
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, processes_with_arg, run_tests, wait_until  # noqa: E402

# Agents started here by hand run jobs as root, as the harness's do: the
# jobs' directories are under this test's private (0700) temp dir.
ROOT_JOBS = ["--job-user", "root", "--allow-root-jobs"] if os.geteuid() == 0 else []


def faults_file(c, name):
    return os.path.join(c.dir, f"faults-{name}")


def start_agent(c, name, gpus="2xH200:141GB", extra=()):
    c.start_agent(name, fake_gpus=gpus, extra=["--fake-fault-file", faults_file(c, name)] + list(extra))


def inject(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def gate_command(c, name):
    path = os.path.join(c.dir, name)
    return ["sh", "-c", f"while [ ! -f {path} ]; do sleep 0.1; done; echo passed {name}"], path


def events(c, kind):
    return [e for e in c.api("GET", "/v1/events?limit=500")["events"] if e["kind"] == kind]


def metric(c, prefix):
    for line in c.api("GET", "/metrics").splitlines():
        if line.startswith(prefix):
            return float(line.split()[-1])
    raise AssertionError(f"no {prefix} in /metrics")


def passes_go_by(c, n=3):
    start = metric(c, "tide_scheduler_passes_total ")
    wait_until(lambda: metric(c, "tide_scheduler_passes_total ") >= start + n, 20,
               what=f"{n} scheduler passes")


def gpu(c, node, index):
    return [g for g in c.node(node)["gpus"] if g["index"] == index][0]


def test_xid_on_a_jobs_gpu_requeues_it_elsewhere_without_a_retry_and_the_gpu_gets_no_work():
    with Cluster(agents=0) as c:
        start_agent(c, "node-1")
        start_agent(c, "node-2")
        cmd, gate = gate_command(c, "a")
        a = c.submit(command=cmd, gpus=2, retries=0)
        first = c.wait_state(a["id"], "running")
        bad, other = first["node"], ({"node-1", "node-2"} - {first["node"]}).pop()
        t0 = time.monotonic()
        inject(faults_file(c, bad), "0 xid 79")
        # Requeued through the preemption path and running on the other node.
        wait_until(lambda: c.job(a["id"])["state"] == "running" and c.job(a["id"])["node"] == other,
                   30, 0.05, what="job running on the other node")
        print(f"fault -> running elsewhere: {time.monotonic() - t0:.2f}s", flush=True)
        job = c.job(a["id"])
        assert job["attempt"] == 2, job
        g0 = gpu(c, bad, 0)
        assert g0["healthy"] is False and g0["fault"] == "xid 79", g0
        assert gpu(c, bad, 1)["healthy"] is True
        assert c.node(bad)["state"] == "ready"  # one GPU's fault does not drain the node
        faults = events(c, "gpu_fault")
        assert len(faults) == 1 and "GPU 0: xid 79" in faults[0]["message"], faults
        pre = [e for e in events(c, "job_preempted") if e["job_id"] == a["id"]]
        assert pre and "gpu fault" in pre[0]["message"], pre
        assert metric(c, f'tide_gpu_healthy{{node="{bad}",gpu="0"') == 0
        assert metric(c, f'tide_gpu_healthy{{node="{bad}",gpu="1"') == 1
        assert metric(c, 'tide_gpu_faults_total{kind="xid"}') == 1
        table = c.cli("nodes", check=True).stdout
        assert "GPU 0: xid 79" in table, table
        # The fault outlives a server restart.
        c.kill_server()
        c.start_server()
        back = time.time()
        wait_until(lambda: c.node(bad)["last_heartbeat"] > back + 0.5, 20, what="agents heard again")
        assert gpu(c, bad, 0)["healthy"] is False
        assert len(events(c, "gpu_fault")) == 1  # the agent's old fault is not a new one
        # Only the healthy GPU of the faulty node takes new work.
        cmd_b, gate_b = gate_command(c, "b")
        b = c.submit(command=cmd_b, gpus=1)
        placed = c.wait_state(b["id"], "running")
        assert placed["node"] == bad and placed["gpus"] == [1], placed
        d = c.submit(command=["true"], gpus=1)
        passes_go_by(c)
        assert c.job(d["id"])["state"] == "pending"
        # The operator says the GPU is fine: it takes work again.
        p = c.cli("nodes", "undrain", bad, check=True)
        assert "ready" in p.stdout, p.stdout
        assert gpu(c, bad, 0)["healthy"] is True
        assert c.wait_final([d["id"]])[d["id"]]["state"] == "succeeded"
        und = events(c, "node_undrained")
        assert und and "GPU faults cleared" in und[-1]["message"], und
        # The same old fault, still reported by the agent, is not acted on again.
        passes_go_by(c)
        assert gpu(c, bad, 0)["healthy"] is True
        open(gate, "w").close()
        open(gate_b, "w").close()
        done = c.wait_final([a["id"], b["id"]])
        assert done[a["id"]]["state"] == "succeeded", done  # retries: 0 and yet it went on


def restart_agent(c, name, fault_file):
    c.kill_agent(name)
    restarted = time.time()
    c.start_agent(name, fake_gpus="2xH200:141GB", extra=["--fake-fault-file", fault_file])
    wait_until(lambda: c.node(name)["last_heartbeat"] > restarted + 0.5, 20,
               what="the restarted agent heard")


def test_a_restarted_agents_faults_are_heard_though_its_count_starts_again():
    # NVML counts a GPU's faults in the agent's memory: after a restart (a
    # reboot, say) it counts from 1 again, below the count the server had.
    # A fresh fault file stands in for that count.
    with Cluster(agents=0) as c:
        start_agent(c, "node-1")
        inject(faults_file(c, "node-1"), "0 xid 79")
        wait_until(lambda: not gpu(c, "node-1", 0)["healthy"], 20, what="GPU 0 faulty")
        c.cli("nodes", "undrain", "node-1", check=True)  # the GPU was reset
        # The same file again: its line is the last run's fault, reported then.
        restart_agent(c, "node-1", faults_file(c, "node-1"))
        passes_go_by(c)
        assert gpu(c, "node-1", 0)["healthy"] is True
        assert len(events(c, "gpu_fault")) == 1
        # A count that starts again: the new run's first fault is a fault.
        fresh = os.path.join(c.dir, "faults-node-1-fresh")
        restart_agent(c, "node-1", fresh)
        inject(fresh, "0 xid 48")
        wait_until(lambda: not gpu(c, "node-1", 0)["healthy"], 20, what="GPU 0 faulty again")
        faults = events(c, "gpu_fault")
        assert len(faults) == 2 and "GPU 0: xid 48" in faults[-1]["message"], faults
        two = c.submit(command=["true"], gpus=2)
        one = c.submit(command=["true"], gpus=1)
        assert c.wait_final([one["id"]])[one["id"]]["gpus"] == [1]
        passes_go_by(c)
        assert c.job(two["id"])["state"] == "pending"
        # The server, restarted, knows which run that count was of.
        c.kill_server()
        c.start_server()
        back = time.time()
        wait_until(lambda: c.node("node-1")["last_heartbeat"] > back + 0.5, 20, what="agent heard")
        passes_go_by(c)
        assert len(events(c, "gpu_fault")) == 2


def test_a_server_upgrade_does_not_fault_again_a_gpu_the_operator_cleared():
    # Rows stored before fault counts were kept with their agent's run
    # (schema version 6) load with no run: a running agent's count, acted on
    # already, was taken for new faults at its first heartbeat after the
    # upgrade, and a GPU cleared by undrain was faulty again.
    with Cluster(agents=0) as c:
        start_agent(c, "node-1")
        inject(faults_file(c, "node-1"), "0 xid 79")
        wait_until(lambda: not gpu(c, "node-1", 0)["healthy"], 20, what="GPU 0 faulty")
        c.cli("nodes", "undrain", "node-1", check=True)
        c.kill_server()
        db = sqlite3.connect(os.path.join(c.data, "tide.db"))
        db.execute("UPDATE gpu_faults SET seq_run = NULL")  # as before version 6
        db.commit()
        db.close()
        c.start_server()
        back = time.time()
        wait_until(lambda: c.node("node-1")["last_heartbeat"] > back + 0.5, 20, what="agent heard")
        passes_go_by(c)
        assert gpu(c, "node-1", 0)["healthy"] is True, gpu(c, "node-1", 0)
        assert len(events(c, "gpu_fault")) == 1
        inject(faults_file(c, "node-1"), "1 xid 48")  # and a new fault is heard
        wait_until(lambda: not gpu(c, "node-1", 1)["healthy"], 20, what="GPU 1 faulty")
        assert gpu(c, "node-1", 0)["healthy"] is True


def test_a_gpu_fallen_off_the_bus_drains_its_node_and_stops_all_its_jobs():
    with Cluster(agents=0) as c:
        start_agent(c, "node-1")
        cmd, gate = gate_command(c, "a")
        a = c.submit(command=cmd, gpus=1, retries=0)
        job = c.wait_state(a["id"], "running")
        assert job["gpus"] == [0], job
        inject(faults_file(c, "node-1"), "1 lost")
        wait_until(lambda: c.node("node-1")["state"] == "draining", 20, what="node draining")
        node = c.node("node-1")
        assert node["drain_reason"].startswith("gpu fault: GPU 1: lost"), node
        # Node-wide: the job on the healthy GPU 0 is requeued too.
        wait_until(lambda: c.job(a["id"])["state"] == "pending", 20, what="job requeued")
        drained = events(c, "node_drained")
        assert drained and "lost" in drained[0]["message"], drained
        assert metric(c, 'tide_gpu_faults_total{kind="lost"}') == 1
        passes_go_by(c)
        assert c.job(a["id"])["state"] == "pending"
        assert "gpu fault: GPU 1: lost" in c.cli("nodes", check=True).stdout
        # Another node takes the job.
        start_agent(c, "node-2")
        job = c.wait_state(a["id"], "running")
        assert job["node"] == "node-2", job
        open(gate, "w").close()
        assert c.wait_final([a["id"]])[a["id"]]["state"] == "succeeded"


def test_a_fault_on_a_mig_gpu_moves_the_jobs_off_its_instances_and_keeps_new_ones_off():
    # NVML reports faults for the physical GPU only; its instances share it.
    with Cluster(agents=0) as c:
        start_agent(c, "mig-1", gpus="2xA100:80GB:mig=3g.40gb*2")  # boards 0, 1; instances 2-5
        cmd, gate = gate_command(c, "a")
        a = c.submit(command=cmd, mig="3g.40gb", retries=0)
        inst = c.wait_state(a["id"], "running")["gpus"][0]
        board = gpu(c, "mig-1", inst)["parent_index"]
        inject(faults_file(c, "mig-1"), f"{board} xid 79")
        # Requeued with no retry used, and running on the other board's instance.
        wait_until(lambda: c.job(a["id"])["attempt"] == 2 and c.job(a["id"])["state"] == "running",
                   30, 0.05, what="the job running again")
        moved = c.job(a["id"])["gpus"][0]
        assert gpu(c, "mig-1", moved)["parent_index"] != board, c.node("mig-1")
        pre = [e for e in events(c, "job_preempted") if e["job_id"] == a["id"]]
        assert pre and f"gpu fault: GPU {board}: xid 79" in pre[0]["message"], pre
        for g in c.node("mig-1")["gpus"]:
            if g.get("parent_index") == board:
                assert g["healthy"] is False and g["fault"] == f"GPU {board}: xid 79", g
        assert c.node("mig-1")["state"] == "ready"  # the other board is healthy
        # The other board's last instance takes one more job; the next waits.
        cmd_b, gate_b = gate_command(c, "b")
        b = c.submit(command=cmd_b, mig="3g.40gb")
        assert gpu(c, "mig-1", c.wait_state(b["id"], "running")["gpus"][0])["parent_index"] != board
        d = c.submit(command=["true"], mig="3g.40gb")
        passes_go_by(c)
        assert c.job(d["id"])["state"] == "pending"
        open(gate, "w").close()
        open(gate_b, "w").close()
        assert c.wait_final([a["id"], b["id"], d["id"]])[d["id"]]["state"] == "succeeded"


def test_repeated_faults_fail_a_node_and_undrain_restores_it():
    with Cluster(agents=0, config="server:\n  node_fault_limit: 3\n") as c:
        start_agent(c, "node-1", gpus="4xH200:141GB")
        path = faults_file(c, "node-1")
        # A GPU already faulty adds no fault to its node's count, however
        # many it reports: one bad GPU does not fail the other three.
        for n, line in enumerate(["0 xid 48", "0 ecc 2", "0 xid 79\n0 xid 79\n0 xid 79"], 1):
            inject(path, line)
            wait_until(lambda: len(events(c, "gpu_fault")) == n, 20, what=f"fault {n}")
        passes_go_by(c)
        assert c.node("node-1")["state"] == "ready", c.node("node-1")
        assert not events(c, "node_failed")
        for n, line in enumerate(["1 temp 96", "2 xid 79"], 4):
            inject(path, line)
            wait_until(lambda: len(events(c, "gpu_fault")) == n, 20, what=f"fault {n}")
        wait_until(lambda: c.node("node-1")["state"] == "failed", 20, what="node failed")
        assert "3 faults" in c.node("node-1")["drain_reason"]
        assert events(c, "node_failed")
        a = c.submit(command=["true"], gpus=1)
        passes_go_by(c)
        assert c.job(a["id"])["state"] == "pending"
        # The failed mark outlives an agent restart.
        c.kill_agent("node-1")
        restarted = time.time()
        start_agent_no_wait(c, "node-1")
        wait_until(lambda: c.node("node-1")["last_heartbeat"] > restarted + 0.5, 20,
                   what="the restarted agent heard")
        passes_go_by(c)
        assert c.node("node-1")["state"] == "failed", c.node("node-1")
        c.cli("nodes", "undrain", "node-1", check=True)
        assert c.node("node-1")["state"] == "ready"
        assert all(g["healthy"] for g in c.node("node-1")["gpus"])
        assert c.wait_final([a["id"]])[a["id"]]["state"] == "succeeded"


def test_a_nodes_fault_count_outlives_a_server_restart():
    with Cluster(agents=0, config="server:\n  node_fault_limit: 3\n") as c:
        start_agent(c, "node-1", gpus="4xH200:141GB")
        path = faults_file(c, "node-1")
        for n, line in enumerate(["0 xid 48", "1 xid 48"], 1):
            inject(path, line)
            wait_until(lambda: len(events(c, "gpu_fault")) == n, 20, what=f"fault {n}")
        c.kill_server()
        c.start_server()
        back = time.time()
        wait_until(lambda: c.node("node-1")["last_heartbeat"] > back + 0.5, 20, what="agent heard")
        inject(path, "2 xid 48")  # the third within the window
        wait_until(lambda: len(events(c, "gpu_fault")) == 3, 20, what="fault 3")
        wait_until(lambda: c.node("node-1")["state"] == "failed", 20, what="node failed")
        assert "3 faults" in c.node("node-1")["drain_reason"], c.node("node-1")


def start_agent_no_wait(c, name):
    work = os.path.join(c.dir, "agents", name)
    c.agents[name] = c._spawn(f"agent-{name}", [
        "agent", "--server", c.url, "--token-file", os.path.join(c.data, "join.token"),
        "--name", name, "--work", work, "--fake-gpus", "4xH200:141GB",
        "--fake-fault-file", faults_file(c, name)] + ROOT_JOBS)


POOL = """
server:
  node_fault_limit: 2
pools:
  - name: gpu
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 2
    scale_down_window_s: 2
    scale_down_utilization: 0
    cooldown_s: 0
"""


def test_a_pool_node_failed_by_faults_is_deleted_and_replaced():
    # two GPUs a node: a GPU's second fault does not count, another GPU's does
    with Cluster(agents=0, config=POOL.replace("gpus_per_node: 1", "gpus_per_node: 2")) as c:
        cmd, gate = gate_command(c, "a")
        a = c.submit(command=cmd, gpus=1, retries=0)
        first = c.wait_state(a["id"], "running", timeout=60)["node"]
        work = os.path.join(c.data, "pool-agents", first)
        assert processes_with_arg(work), "the pool's agent is not running"
        path = os.path.join(work, "fake-faults")
        t0 = time.monotonic()
        inject(path, "0 xid 79")
        inject(path, "1 xid 79")
        wait_until(lambda: c.job(a["id"])["state"] == "running" and c.job(a["id"])["node"] != first,
                   90, 0.1, what="the job running on a replacement node")
        print(f"fault -> running on a new pool node: {time.monotonic() - t0:.2f}s", flush=True)
        wait_until(lambda: c.node(first)["state"] == "failed", 20, what="first node failed")
        failed = [e for e in events(c, "node_failed") if e.get("node") == first]
        assert failed and "faults" in failed[0]["message"], failed
        # Its provider deleted it: the local provider's agent for it is gone.
        wait_until(lambda: not processes_with_arg(work), 30, 0.2, what="the failed node deleted")
        open(gate, "w").close()
        assert c.wait_final([a["id"]])[a["id"]]["state"] == "succeeded"


def test_a_failing_health_probe_keeps_work_off_a_node_until_it_passes():
    with Cluster(agents=0) as c:
        bad = os.path.join(c.dir, "bad")
        open(bad, "w").close()
        probe = f"echo checking; if [ -f {bad} ]; then echo 'burn: 3 errors'; exit 1; fi; echo ok"
        c.start_agent("node-1", fake_gpus="1xH200:141GB", wait=False,
                      extra=["--health-command", probe, "--health-interval-s", "1"])
        # The first probe runs before the node registers: it joins drained.
        wait_until(lambda: c.node("node-1"), 20, what="node registered")
        assert c.node("node-1")["state"] == "draining", c.node("node-1")
        assert c.node("node-1")["drain_reason"] == "health probe failed: burn: 3 errors"
        a = c.submit(command=["true"], gpus=1)
        passes_go_by(c)
        assert c.job(a["id"])["state"] == "pending"
        # a restarted server still knows the drain is the probe's: a passing
        # probe lifts it (it took it for an operator's, kept for ever)
        c.kill_server()
        c.start_server()
        assert c.node("node-1")["drain_reason"] == "health probe failed: burn: 3 errors"
        os.unlink(bad)
        assert c.wait_final([a["id"]])[a["id"]]["state"] == "succeeded"
        assert c.node("node-1")["state"] == "ready"
        kinds = [e["kind"] for e in c.api("GET", "/v1/events?limit=500")["events"]]
        assert "node_drained" in kinds and "node_undrained" in kinds, kinds
        # An operator's drain is not lifted by a passing probe.
        c.cli("nodes", "drain", "node-1", "--reason", "maintenance", check=True)
        time.sleep(2.5)  # two more probe runs, both passing
        assert c.node("node-1")["drain_reason"] == "maintenance"


def test_a_probe_whose_long_line_is_cut_inside_a_character_still_reaches_the_server():
    # 60 "✗" (180 bytes) as the last line: kept to 127 bytes, cut inside a
    # character it was no text, and the agent's registration and every
    # heartbeat failed to encode (the node never joined, or fenced its jobs)
    with Cluster(agents=0) as c:
        probe = "printf '%s\\n' " + "\u2717" * 60 + "; exit 1"
        c.start_agent("node-1", fake_gpus="1xH200:141GB", wait=False,
                      extra=["--health-command", probe, "--health-interval-s", "1"])
        wait_until(lambda: c.node("node-1"), 20, what="node registered")
        time.sleep(2.5)  # heartbeats with the probe's result go on
        node = c.node("node-1")
        assert node["state"] == "draining", node
        reason = node["drain_reason"]
        assert reason.startswith("health probe failed: \u2717") and reason.endswith("\u2717"), reason


def test_a_pools_health_command_reaches_its_nodes_and_keeps_work_off_until_it_passes():
    flags = tempfile.mkdtemp(prefix="tide-e2e-probe-")
    try:
        bad = os.path.join(flags, "bad")
        open(bad, "w").close()
        config = POOL + (f"    health_command: \"test ! -f {bad} || {{ echo gpu burn failed; exit 1; }}\"\n"
                         "    health_interval_s: 1\n")
        with Cluster(agents=0, config=config) as c:
            a = c.submit(command=["true"], gpus=1)
            pool_nodes = lambda: [n for n in c.api("GET", "/v1/nodes")["nodes"]  # noqa: E731
                                  if n.get("pool") == "gpu"]
            wait_until(lambda: [n for n in pool_nodes() if n["state"] == "draining"], 60, 0.1,
                       what="a pool node drained by its probe")
            node = pool_nodes()[0]
            assert node["drain_reason"] == "health probe failed: gpu burn failed", node
            passes_go_by(c)
            assert c.job(a["id"])["state"] == "pending"
            os.unlink(bad)
            done = c.wait_final([a["id"]], timeout=60)[a["id"]]
            # the waiting job may have made the pool add a second node, drained
            # by its own probe too: the job runs on whichever passes first
            assert done["state"] == "succeeded", done
            assert done["node"] in [n["name"] for n in pool_nodes()], done
            evs = c.api("GET", "/v1/events?limit=500")["events"]
            undrained = [e["id"] for e in evs
                         if e["kind"] == "node_undrained" and e["node"] == done["node"]]
            started = [e["id"] for e in evs if e["kind"] == "job_starting" and e["job_id"] == a["id"]]
            assert undrained and started and undrained[0] < started[0], evs
    finally:
        shutil.rmtree(flags, ignore_errors=True)


if __name__ == "__main__":
    run_tests([
        test_xid_on_a_jobs_gpu_requeues_it_elsewhere_without_a_retry_and_the_gpu_gets_no_work,
        test_a_restarted_agents_faults_are_heard_though_its_count_starts_again,
        test_a_server_upgrade_does_not_fault_again_a_gpu_the_operator_cleared,
        test_a_gpu_fallen_off_the_bus_drains_its_node_and_stops_all_its_jobs,
        test_a_fault_on_a_mig_gpu_moves_the_jobs_off_its_instances_and_keeps_new_ones_off,
        test_repeated_faults_fail_a_node_and_undrain_restores_it,
        test_a_nodes_fault_count_outlives_a_server_restart,
        test_a_pool_node_failed_by_faults_is_deleted_and_replaced,
        test_a_failing_health_probe_keeps_work_off_a_node_until_it_passes,
        test_a_probe_whose_long_line_is_cut_inside_a_character_still_reaches_the_server,
        test_a_pools_health_command_reaches_its_nodes_and_keeps_work_off_until_it_passes,
    ])
