"""End to end: elastic pools with the local and the exec provider, metering, provider retries."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import (TIDE, Cluster, install_exec_provider, kill_exec_provider_agents,  # noqa: E402
                     run_tests, wait_until)

PRICE = "3.60"  # per node-hour: 1000 micro-units a second


def pool_config(provider="local", program=None, window=3):
    lines = ["pools:", "  - name: elastic", "    gpu: H200", "    gpus_per_node: 2",
             "    gpu_memory_mib: 144384", f"    provider: {provider}",
             "    min_nodes: 0", "    max_nodes: 2", "    boot_timeout_s: 60",
             f"    price_per_node_hour: {PRICE}", "    billing: on_demand",
             f"    scale_down_window_s: {window}", "    scale_down_utilization: 0",
             "    cooldown_s: 0"]
    if program:
        lines.append(f"    program: {program}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def exec_dir():
    """A directory holding the e2e exec provider (and the files that steer
    it), removed after with the agents it started: yields (the directory,
    the program)."""
    tmp = tempfile.mkdtemp(prefix="tide-exec-")
    try:
        yield tmp, install_exec_provider(tmp)
    finally:
        kill_exec_provider_agents(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def pool(c):
    return c.api("GET", "/v1/pools")["pools"][0]


def test_local_pool_scales_from_zero_and_back_with_metered_cost():
    with Cluster(agents=0, config=pool_config()) as c:
        p = pool(c)
        assert p["nodes"]["ready"] == 0 and p["cost_micros"] == 0, p
        t0 = time.monotonic()
        ids = [c.submit(gpus=1, command=["sh", "-c", "sleep 2"])["id"] for _ in range(4)]
        first = wait_until(lambda: any(c.job(i)["state"] == "running" for i in ids) and time.monotonic(),
                           60, 0.1, what="a job running")
        print(f"  burst of 4 -> first job running after {first - t0:.1f}s", flush=True)
        # Four 1-GPU jobs on 2-GPU nodes: exactly two nodes, never more.
        nodes = [n for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "elastic"]
        assert len(nodes) == 2, nodes
        final = c.wait_final(ids, timeout=90)
        assert all(j["state"] == "succeeded" for j in final.values()), final
        wait_until(lambda: pool(c)["nodes"]["released"] == 2, 40, 0.25, what="both nodes released")
        p = pool(c)
        assert p["nodes"]["ready"] == 0 and p["nodes"]["provisioning"] == 0, p
        nodes = [n for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "elastic"]
        lifetime = sum(n["age_s"] for n in nodes)
        idle = lifetime - p["gpu_seconds_used"] / 2
        print(f"  node lifetime {lifetime:.1f}s, cost {p['cost']}, idle cost {p['idle_cost']}, "
              f"idle node time ~{idle:.1f}s", flush=True)
        assert p["cost_micros"] > 0, p
        # Metered each second: within 2 s per node of lifetime x price.
        assert abs(p["cost_micros"] - lifetime * 1000) <= 2 * 2 * 1000, (p, lifetime)
        assert sum(n["cost_micros"] for n in nodes) == int(sum(n["cost_micros"] for n in nodes))
        assert p["projects"] and p["projects"][0]["project"] == "default", p
        assert p["idle_cost_micros"] < p["cost_micros"], p
        kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert kinds.count("pool_scale_up") == 2 and kinds.count("node_released") == 2, kinds
        metrics = c.api("GET", "/metrics")
        assert 'tide_pool_nodes{pool="elastic",state="released"} 2' in metrics, metrics
        assert 'tide_pool_cost_total{pool="elastic",billing="on_demand"}' in metrics, metrics
        out = c.cli("pools", check=True).stdout
        assert "elastic" in out, out




def test_exec_provider_is_retried_with_backoff_and_deletes_released_nodes():
    tmp = tempfile.mkdtemp(prefix="tide-exec-")
    prog = install_exec_provider(tmp)
    with open(os.path.join(tmp, "fail"), "w") as f:
        f.write("2\n")
    try:
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            j = c.submit(gpus=2, command=["sh", "-c", "echo on-exec-node"])
            # Two refused creates back off, then an agent boots: slow under
            # sanitizers on a loaded machine, so allow plenty of time.
            done = c.wait_final([j["id"]], timeout=240)[j["id"]]
            assert done["state"] == "succeeded", done
            events = c.api("GET", "/v1/events")["events"]
            failed = [e for e in events if e["kind"] == "provider_failed"]
            assert len(failed) == 2, events
            assert failed[0]["message"].endswith("create: exit 1: quota exceeded"), failed
            assert "retrying in" in failed[0]["message"], failed
            p = pool(c)
            assert p["provider_failures"] == 2, p
            assert p["nodes"]["failed"] == 2, p
            m = c.api("GET", "/metrics")
            assert 'tide_provider_failures_total{pool="elastic"} 2' in m, m
            assert 'tide_provider_call_failures_total{pool="elastic",call="create"} 2' in m, m
            # The third create's result is recorded on the pool loop's next tick, which may come
            # after its node has already registered and run the job.
            wait_until(lambda: 'tide_provider_calls_total{pool="elastic",call="create"} 3'
                       in c.api("GET", "/metrics"), 10, 0.2, what="the third create call counted")
            wait_until(lambda: os.path.exists(os.path.join(tmp, "deleted")), 40, 0.25,
                       what="the provider's delete")
            deleted = open(os.path.join(tmp, "deleted")).read().split()
            assert deleted == ["vm-elastic-3"], deleted
    finally:
        kill_exec_provider_agents(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def assert_refused(config, words):
    """A server given config does not start, and says words why."""
    c = Cluster(agents=0, config=config)
    try:
        try:
            c.start_server()
        except AssertionError as e:  # it did not start: why
            assert words in str(e), str(e)
            return
        raise AssertionError("the server started with this config:\n" + config)
    finally:
        c.close()


def test_bad_pool_config_is_refused_with_line_and_key():
    assert_refused(pool_config().replace("max_nodes: 2", "max_nodes: lots"),
                   "tide.yaml:8: pools[0].max_nodes: must be an integer")


def test_exec_provider_is_listed_at_start_and_orphans_are_deleted():
    with exec_dir() as (tmp, prog):
        with open(os.path.join(tmp, "list"), "w") as f:
            f.write('{"nodes":[{"id":"vm-ghost","name":"ghost-1","state":"running"}]}\n')
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            wait_until(lambda: os.path.exists(os.path.join(tmp, "deleted")), 20, 0.2,
                       what="the orphan deleted")
            assert open(os.path.join(tmp, "listed")).read().split() == ["elastic"]
            assert open(os.path.join(tmp, "deleted")).read().split() == ["vm-ghost"]
            kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
            assert "provider_orphan" in kinds, kinds


def test_a_released_node_the_provider_still_lists_is_not_deleted_again():
    # Clouds list a VM for minutes after its delete (state "deleting"): a
    # list every second must not delete it again and again.
    with exec_dir() as (tmp, prog):
        config = pool_config("exec", prog, window=1) + "    list_interval_s: 1\n"
        with Cluster(agents=0, config=config) as c:
            j = c.submit(gpus=2, command=["true"])
            assert c.wait_final([j["id"]], timeout=120)[j["id"]]["state"] == "succeeded"
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 40, 0.2, what="the released node deleted")
            vm = open(deleted).read().split()[0]
            with open(os.path.join(tmp, "list"), "w") as f:
                f.write(json.dumps({"nodes": [{"id": vm, "name": vm[3:], "state": "deleting"}]}))
            listed = os.path.join(tmp, "listed")
            lists = len(open(listed).read().split())
            wait_until(lambda: len(open(listed).read().split()) >= lists + 4, 30, 0.2,
                       what="four more lists")
            assert open(deleted).read().split() == [vm], open(deleted).read()
            kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
            assert "provider_orphan" not in kinds, kinds


def test_a_list_that_names_nodes_not_of_its_pool_deletes_none_of_them():
    # A provider's list filter can match more than its pool (a name prefix,
    # say): a node joined by hand, by its name or by its name as the id, is
    # not this pool's orphan.
    with exec_dir() as (tmp, prog):
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            c.register_by_hand("elastic-hand")
            with open(os.path.join(tmp, "list"), "w") as f:
                f.write('{"nodes":[{"id":"vm-ghost","name":"ghost-1"},{"id":"elastic-hand"},'
                        '{"id":"vm-other","name":"elastic-hand"}]}\n')
            c.kill_server()
            c.start_server()
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 20, 0.2, what="the orphan deleted")
            time.sleep(1)
            assert open(deleted).read().split() == ["vm-ghost"], open(deleted).read()
            assert c.node("elastic-hand")["state"] == "ready"


def test_what_a_provider_holds_is_listed_again_and_its_orphans_deleted():
    # A node the provider made that tide does not know of (a create that
    # failed part way, say) shows up in a later list and is deleted; not
    # only spot pools are listed again.
    with exec_dir() as (tmp, prog):
        config = pool_config("exec", prog) + "    list_interval_s: 1\n"
        with Cluster(agents=0, config=config) as c:
            listed = os.path.join(tmp, "listed")
            wait_until(lambda: os.path.exists(listed), 20, 0.2, what="the list at start")
            assert not os.path.exists(os.path.join(tmp, "deleted"))
            with open(os.path.join(tmp, "list"), "w") as f:
                f.write('{"nodes":[{"id":"vm-leak","name":"elastic-leak"}]}\n')
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 20, 0.2, what="the orphan deleted")
            assert open(deleted).read().split()[0] == "vm-leak"
            assert len(open(listed).read().split()) >= 2
        assert_refused(config.replace("list_interval_s: 1", "list_interval_s: 0"), "list_interval_s")


def test_a_program_that_answers_and_runs_on_does_not_hold_the_server_up():
    # A delete that printed its answer and closed its output, then waits
    # for its VM: the server once waited for it with no deadline, and could
    # not stop.
    with exec_dir() as (tmp, prog):
        with open(os.path.join(tmp, "list"), "w") as f:
            f.write('{"nodes":[{"id":"vm-ghost","name":"ghost-1"}]}\n')
        open(os.path.join(tmp, "hang-delete"), "w").close()
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            wait_until(lambda: os.path.exists(os.path.join(tmp, "deleted")), 20, 0.2,
                       what="the delete started")
            time.sleep(0.5)
            c.kill_server(signal.SIGTERM)  # waits for the exit: fails after 15 s
            assert "stopped, the server is stopping" in c.log("server"), c.log("server")


def test_a_create_that_made_its_node_and_failed_deletes_it_by_its_id_and_says_why():
    # The ids a failed create printed were thrown away: its VM was deleted
    # by tide's name (which a cloud does not know) for ever, and the
    # failure said "exit 3", never the program's own words.
    with exec_dir() as (tmp, prog):
        with open(os.path.join(tmp, "fail-after"), "w") as f:
            f.write("1\n")
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            j = c.submit(gpus=2, command=["true"])
            assert c.wait_final([j["id"]], timeout=120)[j["id"]]["state"] == "succeeded"
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 30, 0.2, what="the failed node deleted")
            assert open(deleted).read().split()[0] == "vm-elastic-1", open(deleted).read()
            failed = [e["message"] for e in c.api("GET", "/v1/events")["events"]
                      if e["kind"] == "provider_failed"]
            assert len(failed) == 1 and failed[0].endswith("create: exit 3: tagging failed"), \
                failed
            # a list runs with SIGPIPE as a shell would (the server ignores it)
            wait_until(lambda: os.path.exists(os.path.join(tmp, "sigign")), 10, 0.2,
                       what="a list")
            mask = int(open(os.path.join(tmp, "sigign")).read().split()[1], 16)
            assert not mask & (1 << (signal.SIGPIPE - 1)), hex(mask)


def test_a_create_whose_agent_holds_its_output_is_answered_when_it_exits():
    # The server read the program's stdout to its end: an agent started in
    # the background holding it kept the create open 300 s, then failed it
    # and killed the agent's group.
    with exec_dir() as (tmp, prog):
        open(os.path.join(tmp, "bg-stdout"), "w").close()
        with Cluster(agents=0, config=pool_config("exec", prog)) as c:
            j = c.submit(gpus=2, command=["true"])
            assert c.wait_final([j["id"]], timeout=120)[j["id"]]["state"] == "succeeded"
            wait_until(lambda: 'tide_provider_calls_total{pool="elastic",call="create"} 1'
                       in c.api("GET", "/metrics"), 20, 0.2, what="the create answered")
            assert pool(c)["provider_failures"] == 0, pool(c)


def test_long_ids_are_kept_whole_and_a_node_without_one_takes_the_listed_one():
    # Ids were cut at 127 bytes (a delete the cloud cannot match, for ever);
    # a node whose create gave no id was deleted by tide's name even after a
    # list named its id.
    with exec_dir() as (tmp, prog):
        open(os.path.join(tmp, "long-id"), "w").close()
        with Cluster(agents=0, config=pool_config("exec", prog, window=1)) as c:
            j = c.submit(gpus=2, command=["true"])
            assert c.wait_final([j["id"]], timeout=120)[j["id"]]["state"] == "succeeded"
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 30, 0.2, what="the node deleted")
            vm = open(deleted).read().split()[0]
            assert vm.startswith("vm-elastic-1/") and len(vm) == 209, (len(vm), vm[:20])
    with exec_dir() as (tmp, prog):
        open(os.path.join(tmp, "no-id"), "w").close()
        config = pool_config("exec", prog, window=3) + "    list_interval_s: 1\n"
        with Cluster(agents=0, config=config) as c:
            j = c.submit(gpus=2, command=["true"])
            assert c.wait_final([j["id"]], timeout=120)[j["id"]]["state"] == "succeeded"
            # listed only once the node is up (3 s before its release):
            # never an orphan, only its id learnt
            with open(os.path.join(tmp, "list"), "w") as f:
                f.write('{"nodes":[{"id":"vm-elastic-1","name":"elastic-1"}]}\n')
            deleted = os.path.join(tmp, "deleted")
            wait_until(lambda: os.path.exists(deleted), 30, 0.2, what="the node deleted")
            assert open(deleted).read().split()[0] == "vm-elastic-1", open(deleted).read()


def test_tide_up_has_a_default_elastic_pool():
    tmp = tempfile.mkdtemp(prefix="tide-up-")
    out_path, err_path = os.path.join(tmp, "up.out"), os.path.join(tmp, "up.err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen([TIDE, "up", "--dir", tmp, "--port", "0", "--agents", "1"],
                                stdout=out, stderr=err)
    try:
        url_file = os.path.join(tmp, "server.url")
        wait_until(lambda: os.path.exists(url_file) and open(url_file).read().strip(), 30, 0.2,
                   what="tide up's server")
        wait_until(lambda: "Ctrl-C stops the cluster" in open(out_path).read(), 30, 0.2,
                   what="tide up's banner")
        # it reads its admin token from the file: no warning about --token
        # on a command line, which nobody gave (it said so at every start)
        assert "--token on the command line" not in open(err_path).read(), open(err_path).read()
        url = open(url_file).read().strip()
        token = open(os.path.join(tmp, "data", "admin.token")).read().strip()
        req = urllib.request.Request(url + "/v1/pools", headers={"Authorization": "Bearer " + token})
        pools = json.load(urllib.request.urlopen(req, timeout=5))["pools"]
        assert len(pools) == 1, pools
        p = pools[0]
        assert (p["name"], p["provider"], p["min_nodes"], p["max_nodes"]) == ("elastic", "local", 0, 3), p
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


SPOT = """pools:
  - name: spot
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 2
    billing: spot
    price_per_node_hour: 3.60
    spot_price_per_node_hour: 1.08
    interruption_grace_s: 10
    scale_down_window_s: 2
    scale_down_utilization: 0
    cooldown_s: 0
"""

# Counts to 8, saving progress in TIDE_CHECKPOINT_DIR; SIGTERM saves and exits.
CHECKPOINTING = r"""
dir="$TIDE_CHECKPOINT_DIR"; step=0
if [ -f "$dir/step" ]; then step=$(cat "$dir/step"); echo "resumed at $step on attempt $TIDE_ATTEMPT"; fi
trap 'echo $step > "$dir/step"; echo "checkpointed at $step"; exit 0' TERM
while [ $step -lt 8 ]; do sleep 0.5 & wait $!; step=$((step + 1)); echo $step > "$dir/step"; done
echo "result $step"
"""


def test_spot_interruption_requeues_a_checkpointing_job_that_finishes_elsewhere():
    with Cluster(agents=0, config=SPOT, kill_grace_s=5) as c:
        # Not preemptible, and every pool here is spot: refused at submit.
        status, out = c.request("POST", "/v1/jobs", {"gpus": 1, "command": ["true"]})
        assert status == 400 and out["error"]["field"] == "preemptible", (status, out)
        job = c.submit(gpus=1, preemptible=True, command=["sh", "-c", CHECKPOINTING])
        c.wait_state(job["id"], "running", timeout=60)
        wait_until(lambda: os.path.exists(os.path.join(c.data, "checkpoints", str(job["id"]), "step")),
                   15, what="first checkpoint")
        first = c.job(job["id"])["node"]
        node_id = c.node(first)["id"]
        out = c.cli("nodes", "interrupt", str(node_id), check=True).stdout
        assert "1 job(s) asked to checkpoint" in out, out
        done = c.wait_final([job["id"]], timeout=90)[job["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 2, done
        assert done["node"] != first, (done, first)
        log = c.logs(job["id"])
        assert "checkpointed at" in log and "resumed at" in log and log.strip().endswith("result 8"), log
        p = pool(c)
        assert p["interruptions"] == 1, p
        assert 'tide_pool_interruptions_total{pool="spot"} 1' in c.api("GET", "/metrics")
        kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert "node_interrupted" in kinds and "job_preempted" in kinds, kinds
        wait_until(lambda: c.node(first)["state"] == "released", 20, 0.25, what="interrupted node released")
        # Two nodes in all: the first and its replacement.
        assert sum(1 for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "spot") == 2


def test_a_node_whose_gpus_are_not_its_pools_is_refused_by_the_pool():
    # The pool bills 2 H200s a node: 4 of them, or A100s, would be metered
    # and charged to projects beyond what the pool costs.
    with Cluster(agents=0, config=pool_config()) as c:
        for name, gpus, said in [("four", "4xH200:141GB", "has 4 GPUs; pool elastic's nodes have 2"),
                                 ("a100", "2xA100:80GB", "pool elastic's nodes have H200")]:
            c.start_agent(name, fake_gpus=gpus, extra=["--pool", "elastic"], wait=False)
            assert c.agents[name].wait(30) != 0, name
            del c.agents[name]
            with open(os.path.join(c.dir, f"agent-{name}.log")) as f:
                log = f.read()
            assert said in log and "not taken into the pool" in log, log
            assert c.node(name) is None, c.node(name)
        c.start_agent("right", fake_gpus="2xH200:141GB", extra=["--pool", "elastic"])
        assert c.node("right")["pool"] == "elastic", c.node("right")


# Takes 4 s to checkpoint after SIGTERM; the next attempt says whether it found it.
SLOW_CHECKPOINT = r"""
dir="$TIDE_CHECKPOINT_DIR"
if [ "$TIDE_ATTEMPT" -gt 1 ]; then [ -f "$dir/saved" ] && echo "resumed"; exit 0; fi
trap 'echo "got TERM"; sleep 4; touch "$dir/saved"; echo "checkpoint saved"; exit 0' TERM
echo started; while :; do sleep 0.5 & wait $!; done
"""


def test_a_spot_interruption_gives_the_checkpoint_the_pools_grace_not_the_kill_grace():
    # interruption_grace_s 10 against --kill-grace-s 1: the checkpoint's 4 s fit.
    with Cluster(agents=0, config=SPOT, kill_grace_s=1) as c:
        job = c.submit(gpus=1, preemptible=True, command=["sh", "-c", SLOW_CHECKPOINT])
        c.wait_state(job["id"], "running", timeout=60)
        wait_until(lambda: "started" in c.logs(job["id"]), 15, what="the job's start")
        c.cli("nodes", "interrupt", str(c.node(c.job(job["id"])["node"])["id"]), check=True)
        done = c.wait_final([job["id"]], timeout=90)[job["id"]]
        log = c.logs(job["id"])
        assert done["attempt"] == 2, done
        assert "checkpoint saved" in log and "resumed" in log, log


def test_project_over_its_budget_gets_no_new_nodes_and_its_jobs_wait():
    tmp = tempfile.mkdtemp(prefix="tide-budget-")
    hook_out = os.path.join(tmp, "alerts")
    config = pool_config(window=1).replace("max_nodes: 2", "max_nodes: 2\n    gpus_per_node: 1").replace(
        "    gpus_per_node: 2\n", "").replace(f"price_per_node_hour: {PRICE}", "price_per_node_hour: 3600.00")
    config += ("projects:\n  - name: vision\n    budget_daily: 3.00\n    alert_pct: [50, 100]\n"
               "    hard_cap: true\n"
               f"    alert_hook: echo $TIDE_PROJECT $TIDE_BUDGET_PERIOD $TIDE_BUDGET_PCT >> {hook_out}\n")
    try:
        with Cluster(agents=0, config=config) as c:
            first = c.submit(gpus=1, project="vision", command=["sh", "-c", "sleep 5"])
            done = c.wait_final([first["id"]], timeout=60)[first["id"]]
            assert done["state"] == "succeeded", done  # running jobs are not killed
            wait_until(lambda: any(e["kind"] == "budget_alert" and "100%" in e["message"]
                                   for e in c.api("GET", "/v1/events")["events"]), 10, 0.2,
                       what="the 100% alert")
            ups = pool(c)["scale_ups"]
            second = c.submit(gpus=1, project="vision", command=["true"])
            time.sleep(4)
            j = c.job(second["id"])
            assert j["state"] == "pending" and "budget exhausted" in j.get("pending_reason", ""), j
            assert pool(c)["scale_ups"] == ups, pool(c)
            m = c.api("GET", "/metrics")
            assert 'tide_project_budget{project="vision",period="daily"} 3.000000' in m, m
            assert 'tide_project_budget_alert_ratio{project="vision",period="daily"} 1.00' in m, m
            wait_until(lambda: os.path.exists(hook_out) and len(open(hook_out).read().split("\n")) >= 3,
                       10, 0.2, what="the alert hook")
            assert open(hook_out).read().split("\n")[:2] == ["vision daily 50", "vision daily 100"]
            other = c.submit(gpus=1, project="default", command=["true"])
            assert c.wait_final([other["id"]], timeout=60)[other["id"]]["state"] == "succeeded"
            c.api("DELETE", f"/v1/jobs/{second['id']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_burst_of_40_jobs_scales_from_zero_to_max_and_back_with_cost():
    config = pool_config(window=3).replace("max_nodes: 2", "max_nodes: 4")
    with Cluster(agents=0, config=config) as c:
        t0 = time.monotonic()
        ids = [c.submit(gpus=1, command=["sh", "-c", "sleep 1"])["id"] for _ in range(40)]
        first = wait_until(lambda: any(c.job(i)["state"] == "running" for i in ids) and time.monotonic(),
                           60, 0.1, what="a job running")
        peak = 0

        def all_done():
            nonlocal peak
            p = pool(c)
            alive = sum(p["nodes"][s] for s in ("provisioning", "ready", "draining", "lost"))
            peak = max(peak, alive)
            return all(c.job(i)["state"] in ("succeeded", "failed") for i in ids)
        wait_until(all_done, 180, 0.5, what="40 jobs done")
        t_done = time.monotonic()
        final = c.wait_final(ids, timeout=10)
        assert all(j["state"] == "succeeded" for j in final.values()), final
        wait_until(lambda: pool(c)["nodes"]["released"] == 4, 60, 0.25, what="the pool back to 0")
        p = pool(c)
        assert peak == 4 and p["scale_ups"] == 4, (peak, p)
        nodes = [n for n in c.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "elastic"]
        lifetime = sum(n["age_s"] for n in nodes)
        used = p["gpu_seconds_used"]
        idle = lifetime * 2 - used
        print(f"  burst of 40: first job running after {first - t0:.1f}s, all done after "
              f"{t_done - t0:.1f}s, peak {peak} nodes, node lifetime {lifetime:.1f}s, GPU-s used "
              f"{used:.1f} of {lifetime * 2:.1f} (idle GPU-s {idle:.1f}), cost {p['cost']}, "
              f"idle cost {p['idle_cost']}", flush=True)
        assert abs(p["cost_micros"] - lifetime * 1000) <= 4 * 2 * 1000, (p, lifetime)


if __name__ == "__main__":
    only = sys.argv[1:]  # substrings of test names to run; all when none
    run_tests([t for t in [test_local_pool_scales_from_zero_and_back_with_metered_cost,
               test_exec_provider_is_retried_with_backoff_and_deletes_released_nodes,
               test_bad_pool_config_is_refused_with_line_and_key,
               test_exec_provider_is_listed_at_start_and_orphans_are_deleted,
               test_a_released_node_the_provider_still_lists_is_not_deleted_again,
               test_a_list_that_names_nodes_not_of_its_pool_deletes_none_of_them,
               test_what_a_provider_holds_is_listed_again_and_its_orphans_deleted,
               test_a_program_that_answers_and_runs_on_does_not_hold_the_server_up,
               test_a_create_that_made_its_node_and_failed_deletes_it_by_its_id_and_says_why,
               test_a_create_whose_agent_holds_its_output_is_answered_when_it_exits,
               test_long_ids_are_kept_whole_and_a_node_without_one_takes_the_listed_one,
               test_tide_up_has_a_default_elastic_pool,
               test_spot_interruption_requeues_a_checkpointing_job_that_finishes_elsewhere,
               test_a_spot_interruption_gives_the_checkpoint_the_pools_grace_not_the_kill_grace,
               test_a_node_whose_gpus_are_not_its_pools_is_refused_by_the_pool,
               test_project_over_its_budget_gets_no_new_nodes_and_its_jobs_wait,
               test_burst_of_40_jobs_scales_from_zero_to_max_and_back_with_cost] if not only or any(o in t.__name__ for o in only)])
