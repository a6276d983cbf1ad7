"""End to end: push to agents. With a heartbeat interval far longer than
the bounds below, a job still starts, a cancel still reaches the agent and
a finished task is still recorded well before the next heartbeat could have
carried them: only the long-poll (POST /v1/agent/wait) can do that. Also
across a kill -9 of the server, and the wait endpoint's own contract."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

HEARTBEAT_MS = 60000  # the agents' next heartbeat is this far off (above the 30 s a wait may last)
BOUND_S = 5           # each step must happen well before that


def test_start_cancel_and_finish_reach_the_agent_long_before_the_next_heartbeat():
    with Cluster(agents=1, heartbeat_ms=HEARTBEAT_MS, node_timeout_ms=180000) as c:
        long_job = c.submit(command=["sleep", "60"], gpus=1)["id"]
        c.wait_state(long_job, "running", BOUND_S)
        job = c.api("DELETE", f"/v1/jobs/{long_job}")
        assert job["state"] in ("running", "starting"), job
        done = c.wait_state(long_job, "cancelled", BOUND_S)
        assert done["reason"], done
        short = c.submit(command=["true"], gpus=1)["id"]
        c.wait_state(short, "succeeded", BOUND_S)


def test_push_survives_a_kill_9_of_the_server():
    with Cluster(agents=1, heartbeat_ms=HEARTBEAT_MS, node_timeout_ms=180000) as c:
        first = c.submit(command=["true"], gpus=1)["id"]
        c.wait_state(first, "succeeded", BOUND_S)
        c.kill_server()
        c.start_server()
        # the agent's wait comes back to the new server by itself
        second = c.submit(command=["true"], gpus=1)["id"]
        c.wait_state(second, "succeeded", BOUND_S + 2)
        # nothing ran twice: each job has one attempt
        assert c.job(first)["attempt"] == 1 and c.job(second)["attempt"] == 1


def test_wait_answers_false_at_its_time_and_refuses_other_tokens():
    with Cluster(agents=0) as c:
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 10})
        assert status == 403, (status, out)
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 10}, token=c.join)
        assert status == 403, (status, out)
        c.start_agent("node-1")
        token = None
        import json
        # the node is ready once the server has it; the agent saves the file after
        node_file = os.path.join(c.dir, "agents", "node-1", "node.json")
        wait_until(lambda: os.path.exists(node_file), 10, 0.02, what="node.json")
        with open(node_file) as f:
            token = json.load(f)["node_token"]
        start = time.monotonic()
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 200}, token=token)
        # the leader's epoch comes with it (docs/ha.md): 1 on a first start
        assert status == 200 and out == {"wake": False, "epoch": 1}, (status, out)
        assert time.monotonic() - start >= 0.15
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": "soon"}, token=token)
        assert status == 400 and out["error"]["field"] == "wait_ms", (status, out)
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 10 ** 9}, token=token)
        assert status == 400 and out["error"]["field"] == "wait_ms", (status, out)


if __name__ == "__main__":
    run_tests([
        test_start_cancel_and_finish_reach_the_agent_long_before_the_next_heartbeat,
        test_push_survives_a_kill_9_of_the_server,
        test_wait_answers_false_at_its_time_and_refuses_other_tokens,
    ])
