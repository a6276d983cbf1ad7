"""End to end: a server's wall clock stepped forward (NTP, an operator) by
less than half a node timeout does not make a live but silent node lost
early: silence is measured on the monotonic clock. The step comes from a
preloaded library (shift_clock.c, TIDE_SHIFT_CLOCK_LIB)."""
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


if __name__ == "__main__":
    if not os.environ.get("TIDE_SHIFT_CLOCK_LIB"):
        print("SKIP: TIDE_SHIFT_CLOCK_LIB is not set (ctest sets it)", flush=True)
        sys.exit(SKIP)
    run_tests([test_a_forward_clock_step_does_not_lose_a_silent_node_early])
