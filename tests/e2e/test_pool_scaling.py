"""End to end: exec provider calls run concurrently (a slow create for one pool holds up
no other pool), scheduled capacity windows and step scaling with the local provider."""
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import (Cluster, install_exec_provider, kill_exec_provider_agents,  # noqa: E402
                     processes_with_env, run_tests, wait_until)



def exec_pool(name, gpu, prog):
    return "\n".join([
        f"  - name: {name}", f"    gpu: {gpu}", "    gpus_per_node: 1", "    gpu_memory_mib: 81920",
        "    provider: exec", f"    program: {prog}", "    min_nodes: 0", "    max_nodes: 1",
        "    boot_timeout_s: 300", "    scale_down_window_s: 1", "    scale_down_utilization: 0",
        "    cooldown_s: 0"]) + "\n"


def lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def pools_by_name(c):
    return {p["name"]: p for p in c.api("GET", "/v1/pools")["pools"]}


def pool_nodes(c, pool):
    return [n for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == pool]


def with_gated_provider(test):
    """Runs test(tmp, prog) with the provider script in a temp dir; kills the
    agents it started afterwards."""
    tmp = tempfile.mkdtemp(prefix="tide-exec-")
    prog = install_exec_provider(tmp)  # a create for pool `slow` waits for the file `go`
    try:
        test(tmp, prog)
    finally:
        kill_exec_provider_agents(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def test_slow_create_for_one_pool_holds_up_no_other_pool():
    def body(tmp, prog):
        config = "pools:\n" + exec_pool("slow", "A100", prog) + exec_pool("fast", "H200", prog)
        with Cluster(agents=0, config=config) as c:
            a = c.submit(gpus=1, gpu_model="A100", command=["sh", "-c", "echo on-slow"])
            wait_until(lambda: any(l.startswith("slow ") for l in lines(os.path.join(tmp, "creating"))),
                       60, 0.1, what="the slow pool's create to start")
            b = c.submit(gpus=1, gpu_model="H200", command=["sh", "-c", "echo on-fast"])
            done = c.wait_final([b["id"]], timeout=120)[b["id"]]
            assert done["state"] == "succeeded", done
            # The fast pool's node was created, ran its job and is deleted again,
            # all while the slow pool's create is still in flight.
            wait_until(lambda: "vm-fast-1" in lines(os.path.join(tmp, "deleted")), 60, 0.2,
                       what="the fast pool's node deleted")
            created = lines(os.path.join(tmp, "created"))
            assert created == ["fast fast-1"], created
            assert c.job(a["id"])["state"] == "pending", c.job(a["id"])
            slow = pool_nodes(c, "slow")
            assert [n["state"] for n in slow] == ["provisioning"], slow
            # One create call per pool so far: the loop did not ask again for
            # the node whose create is on its way.
            creating = lines(os.path.join(tmp, "creating"))
            assert sorted(creating) == ["fast fast-1", "slow slow-1"], creating
            ups = [e for e in c.api("GET", "/v1/events")["events"] if e["kind"] == "pool_scale_up"]
            assert len(ups) == 2, ups
            # Let the slow create finish: its node boots and runs its job.
            open(os.path.join(tmp, "go"), "w").close()
            done = c.wait_final([a["id"]], timeout=120)[a["id"]]
            assert done["state"] == "succeeded", done
            assert sorted(lines(os.path.join(tmp, "created"))) == ["fast fast-1", "slow slow-1"]
            p = pools_by_name(c)
            assert p["slow"]["provider_failures"] == 0 and p["fast"]["provider_failures"] == 0, p
            assert c.node("slow-1")["state"] in ("ready", "draining", "released"), c.node("slow-1")
    with_gated_provider(body)


def test_server_stops_a_create_in_flight_and_exits_cleanly():
    def body(tmp, prog):
        config = "pools:\n" + exec_pool("slow", "A100", prog)
        with Cluster(agents=0, config=config) as c:
            c.submit(gpus=1, gpu_model="A100", command=["true"])
            pid_file = os.path.join(tmp, "slow-create.pid")
            wait_until(lambda: lines(pid_file), 60, 0.1, what="the slow create to start")
            pid = int(lines(pid_file)[0])
            assert processes_with_env("TIDE_NODE_NAMES", "slow-1"), "the provider program is not running"
            os.killpg(c.server.pid, signal.SIGTERM)
            rc = c.server.wait(60)
            assert rc == 0, (rc, c.log("server"))
            # The program (and its sleep) were stopped and reaped: no process
            # of that call is left, not even a zombie.
            assert not os.path.exists(f"/proc/{pid}"), open(f"/proc/{pid}/stat").read()
            assert processes_with_env("TIDE_NODE_NAMES", "slow-1") == []
            assert "the server is stopping" in c.log("server"), c.log("server")
            assert lines(os.path.join(tmp, "created")) == []
            # What the stop recorded: the create failed, and so did its node.
            c.start_server()
            assert c.node("slow-1")["state"] == "failed", c.node("slow-1")
            failed = [e["message"] for e in c.api("GET", "/v1/events")["events"]
                      if e["kind"] == "provider_failed"]
            assert len(failed) == 1 and "the server is stopping" in failed[0], failed
    with_gated_provider(body)


def test_spot_list_runs_beside_a_slow_create_and_reports_an_interruption():
    def body(tmp, prog):
        spot = exec_pool("spot", "H200", prog).replace("cooldown_s: 0", "cooldown_s: 0\n    billing: spot")
        config = "pools:\n" + exec_pool("slow", "A100", prog) + spot
        with Cluster(agents=0, config=config) as c:
            c.submit(gpus=1, gpu_model="A100", command=["true"])
            job = c.submit(gpus=1, gpu_model="H200", preemptible=True, command=["sleep", "600"])
            c.wait_state(job["id"], "running", timeout=120)
            with open(os.path.join(tmp, "list-spot"), "w") as f:
                f.write('{"nodes":[{"id":"vm-spot-1","name":"spot-1","state":"interrupted"},'
                        '{"id":"vm-stray","name":"stray-1","state":"running"}]}\n')
            # The spot pool's list (every 15 s) is answered and acted on while
            # the slow pool's create is still in flight.
            wait_until(lambda: any(e["kind"] == "node_interrupted"
                                   for e in c.api("GET", "/v1/events")["events"]),
                       90, 0.25, what="the interruption the list reports")
            wait_until(lambda: "vm-stray" in lines(os.path.join(tmp, "deleted")), 60, 0.25,
                       what="the orphan the list shows deleted")
            assert not any(l.startswith("slow ") for l in lines(os.path.join(tmp, "created")))
            assert [n["state"] for n in pool_nodes(c, "slow")] == ["provisioning"]
            assert lines(os.path.join(tmp, "listed")).count("slow") == 1  # at start only: not spot
            c.api("DELETE", f"/v1/jobs/{job['id']}")
    with_gated_provider(body)


DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def local_pool(name, gpu, gpus_per_node, max_nodes, extra):
    return "\n".join([
        f"  - name: {name}", f"    gpu: {gpu}", f"    gpus_per_node: {gpus_per_node}",
        "    gpu_memory_mib: 81920", "    provider: local", "    min_nodes: 0",
        f"    max_nodes: {max_nodes}", "    boot_timeout_s: 120"] + extra) + "\n"


def window(days, start, end, min_nodes):
    return [f"      - days: {days}", f"        from: \"{start:%H:%M}\"",
            f"        to: \"{end:%H:%M}\"", f"        min_nodes: {min_nodes}"]


def test_scheduled_window_keeps_nodes_up_only_while_it_is_open():
    now = datetime.datetime.now(datetime.timezone.utc)
    today, yesterday, tomorrow = (DAYS[(now.weekday() + d) % 7] for d in (0, -1, 1))
    hours = datetime.timedelta(hours=1)
    # Open now: today (or, when it runs past midnight, yesterday's window).
    opened = window(f"{yesterday},{today}", now - 2 * hours, now + 2 * hours, 2)
    # Closed now: the same hours on another day, and later hours today.
    closed = window(tomorrow, now - 2 * hours, now + 2 * hours, 3) + \
        window("all", now + 2 * hours, now + 3 * hours, 3)
    idle = ["    scale_down_window_s: 1", "    scale_down_utilization: 0", "    cooldown_s: 0"]
    config = ("pools:\n" + local_pool("office", "H200", 1, 3, idle + ["    schedule:"] + opened)
              + local_pool("later", "A100", 1, 3, idle + ["    schedule:"] + closed))
    with Cluster(agents=0, config=config) as c:
        wait_until(lambda: pools_by_name(c)["office"]["nodes"]["ready"] == 2, 90, 0.25,
                   what="the window's two nodes ready")
        # Idle for well over scale_down_window_s, yet kept: the window holds them.
        wait_until(lambda: all(n["idle_s"] and n["idle_s"] > 4 for n in pool_nodes(c, "office")),
                   60, 0.25, what="the window's nodes idle past the scale-down window")
        p = pools_by_name(c)
        assert p["office"]["nodes"]["ready"] == 2 and p["office"]["scale_ups"] == 2, p["office"]
        assert p["office"]["scale_downs"] == 0, p["office"]
        # Decided in the same passes as the open one: the closed windows add nothing.
        assert pool_nodes(c, "later") == [], pool_nodes(c, "later")
        assert p["later"]["scale_ups"] == 0, p["later"]
        events = c.api("GET", "/v1/events")["events"]
        ups = [e["message"] for e in events if e["kind"] == "pool_scale_up"]
        assert len(ups) == 2 and all("office" in m and "min_nodes 2 (scheduled window)" in m for m in ups), ups
        assert not [e for e in events if e["kind"] == "node_released"], events


def test_steps_add_their_nodes_not_just_the_bin_packed_ones():
    # Four 1-GPU jobs fit one 4-GPU node; the queue_length step asks for 3 at once.
    queue_step = ["    cooldown_s: 600", "    steps:", "      - queue_length: 3", "        add: 3"]
    # Nodes are added for a waiting job only after an hour, but the wait_s
    # step acts after 2 s with 2 nodes.
    wait_step = ["    cooldown_s: 600", "    scale_up_delay_s: 3600", "    steps:",
                 "      - wait_s: 2", "        add: 2"]
    config = ("pools:\n" + local_pool("queued", "H200", 4, 6, queue_step)
              + local_pool("waited", "A100", 4, 6, wait_step))
    with Cluster(agents=0, config=config) as c:
        jobs = c.submit(gpus=1, gpu_model="H200", array=4, command=["sh", "-c", "sleep 1"])["jobs"]
        waiter = c.submit(gpus=1, gpu_model="A100", command=["sh", "-c", "sleep 1"])
        final = c.wait_final([j["id"] for j in jobs] + [waiter["id"]], timeout=180)
        assert all(j["state"] == "succeeded" for j in final.values()), final
        p = pools_by_name(c)
        assert p["queued"]["scale_ups"] == 3, p["queued"]
        assert p["waited"]["scale_ups"] == 2, p["waited"]
        assert len(pool_nodes(c, "queued")) == 3 and len(pool_nodes(c, "waited")) == 2
        events = c.api("GET", "/v1/events")["events"]
        for pool, n in (("queued", 3), ("waited", 2)):
            ups = [e["message"] for e in events
                   if e["kind"] == "pool_scale_up" and e["message"].startswith(f"pool {pool}:")]
            assert len(ups) == n and all("(step)" in m for m in ups), ups
        # What the CLI shows agrees.
        out = c.cli("pools", "--json", check=True).stdout
        shown = {p["name"]: p for p in json.loads(out)["pools"]}
        assert shown["queued"]["nodes"]["provisioning"] + shown["queued"]["nodes"]["ready"] == 3, shown


if __name__ == "__main__":
    only = sys.argv[1:]  # substrings of test names to run; all when none
    run_tests([t for t in [test_slow_create_for_one_pool_holds_up_no_other_pool,
               test_server_stops_a_create_in_flight_and_exits_cleanly,
               test_spot_list_runs_beside_a_slow_create_and_reports_an_interruption,
               test_scheduled_window_keeps_nodes_up_only_while_it_is_open,
               test_steps_add_their_nodes_not_just_the_bin_packed_ones]
               if not only or any(o in t.__name__ for o in only)])
