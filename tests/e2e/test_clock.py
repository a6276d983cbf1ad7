"""End to end: a server's wall clock stepped forward (NTP, an operator) by
less than half a node timeout does not make a live but silent node lost
early: silence is measured on the monotonic clock; and usage metered
across a midnight UTC by both meters (a pool's, nodes joined by hand) is
kept whole by a restart. The clock is moved by a preloaded library
(shift_clock.c, TIDE_SHIFT_CLOCK_LIB)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

SKIP = 77


def test_a_forward_clock_step_does_not_lose_a_silent_node_early():
    lib = os.environ["TIDE_SHIFT_CLOCK_LIB"]
    with Cluster(agents=0, node_timeout_ms=20000) as c:
        shift = os.path.join(c.dir, "clock-shift-ms")
        with open(shift, "w") as f:
            f.write("0\n")
        c.restart_server_preloaded(lib, TIDE_TEST_CLOCK_SHIFT=shift)
        c.start_agent("node-1")
        job = c.submit(command=["sleep", "60"], gpus=1)
        c.wait_state(job["id"], "running")
        agent = c.agents["node-1"]
        os.killpg(agent.pid, signal.SIGSTOP)  # silent, not dead: it fences by its own clock
        try:
            time.sleep(12)
            with open(shift, "w") as f:
                f.write("9500\n")  # 12 s + 9.5 s: past the 20 s timeout on the wall clock
            time.sleep(2.5)  # the agent fences at 18 s: time left to wake it
            assert c.node("node-1")["state"] == "ready", c.node("node-1")
            assert c.job(job["id"])["attempt"] == 1, c.job(job["id"])
        finally:
            os.killpg(agent.pid, signal.SIGCONT)
        wait_until(lambda: c.node("node-1")["state"] == "ready", 10, what="the node heard again")
        assert c.job(job["id"])["attempt"] == 1 and c.job(job["id"])["state"] == "running"
        c.api("DELETE", f"/v1/jobs/{job['id']}")


POOL = """pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 1
    boot_timeout_s: 60
    price_per_node_hour: 3600.00
    billing: on_demand
    scale_down_window_s: 1
    scale_down_utilization: 0
    cooldown_s: 0
"""
DAY_MS = 86400000


def vision_usage(c):
    rows = c.api("GET", "/v1/usage?by=project,pool,day")["rows"]
    return sorted((r["pool"], r["day"], r["gpu_hours"], r["cost_micros"]) for r in rows
                  if r.get("project") == "vision")


def test_usage_of_both_meters_across_midnight_is_kept_by_a_restart():
    # The meter that crosses midnight second once added its last seconds of
    # the old day as a second row, which the store saved over the whole day.
    lib = os.environ["TIDE_SHIFT_CLOCK_LIB"]
    with Cluster(agents=0, config=POOL) as c:
        shift = os.path.join(c.dir, "clock-shift-ms")
        now = int(time.time() * 1000)
        with open(shift, "w") as f:
            f.write(f"{(now // DAY_MS + 1) * DAY_MS - 30000 - now}\n")  # 30 s before midnight
        c.restart_server_preloaded(lib, TIDE_TEST_CLOCK_SHIFT=shift)
        c.start_agent("hand-1", fake_gpus="1xA100:80GB")
        jobs = [c.submit(gpus=1, project="vision", gpu_model=m, command=["sleep", "45"])
                for m in ("A100", "H200")]
        c.wait_final([j["id"] for j in jobs], timeout=120)
        time.sleep(6.5)  # the meter of nodes joined by hand saves every 5 s
        before = vision_usage(c)
        assert len(before) == 4, before  # two pools, each on both days
        c.restart_server_preloaded(lib, TIDE_TEST_CLOCK_SHIFT=shift)
        after = vision_usage(c)
        assert after == before, (before, after)

if __name__ == "__main__":
    if not os.environ.get("TIDE_SHIFT_CLOCK_LIB"):
        print("SKIP: TIDE_SHIFT_CLOCK_LIB is not set (ctest sets it)", flush=True)
        sys.exit(SKIP)
    run_tests([test_a_forward_clock_step_does_not_lose_a_silent_node_early,
               test_usage_of_both_meters_across_midnight_is_kept_by_a_restart])
