"""End to end: push to agents. With a heartbeat interval far longer than
the bounds below, a job still starts, a cancel still reaches the agent and
a finished task is still recorded well before the next heartbeat could have
carried them: only the long-poll (POST /v1/agent/wait) can do that. Also
across a kill -9 of the server, and the wait endpoint's own contract."""
import os
import signal
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


def test_a_wait_answer_carries_the_start_once_and_a_lost_one_comes_again_in_a_heartbeat():
    # A node driven by hand: its wait answer is the only place the start
    # can come from before it heartbeats.
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": []}, token=token)
        assert status == 200 and out["actions"] == [], out
        job = c.submit(command=["true"], gpus=1)["id"]
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 10000}, token=token)
        assert status == 200 and out["wake"] is True, (status, out)
        starts = [a for a in out.get("actions", []) if a["type"] == "start"]
        assert [(a["job_id"], a["attempt"]) for a in starts] == [(job, 1)], out
        assert starts[0]["gpus"] == [0] and starts[0]["command"] == ["true"], starts
        # delivered once: the next wait has nothing new
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 200}, token=token)
        assert status == 200 and out["wake"] is False and "actions" not in out, out
        # That answer was lost (the agent died before acting on it): its
        # next heartbeat, mentioning no task, gets the same start again.
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": []}, token=token)
        assert status == 200, out
        again = [(a["job_id"], a["attempt"]) for a in out["actions"] if a["type"] == "start"]
        assert again == [(job, 1)], out
        assert c.job(job)["state"] == "starting"
        for state in ("running", "exited"):
            task = {"job_id": job, "attempt": 1, "state": state, "exit_code": 0}
            status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [task]},
                                    token=token)
            assert status == 200 and out["actions"] == [], out
        done = c.job(job)
        assert done["state"] == "succeeded" and done["attempt"] == 1, done


def test_a_cancel_rides_the_wait_answer_as_a_stop():
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]
        job = c.submit(command=["sleep", "60"], gpus=1)["id"]
        c.wait_state(job, "starting", 10)
        task = {"job_id": job, "attempt": 1, "state": "running"}
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [task]}, token=token)
        assert status == 200 and c.job(job)["state"] == "running", out
        c.api("DELETE", f"/v1/jobs/{job}")
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 10000}, token=token)
        assert status == 200 and out["wake"] is True, out
        assert [(a["type"], a["job_id"], a["reason"]) for a in out["actions"]] == \
            [("stop", job, "cancelled")], out


def test_a_start_whose_wait_answer_the_agent_never_acted_on_runs_once():
    marker = None
    with Cluster(agents=1, heartbeat_ms=HEARTBEAT_MS, node_timeout_ms=180000) as c:
        marker = os.path.join(c.dir, "ran")
        time.sleep(0.3)  # its wait is parked
        agent = c.agents["node-1"]
        os.kill(agent.pid, signal.SIGSTOP)  # frozen: the answer waits unread
        job = c.submit(command=["sh", "-c", f"echo once >> {marker}"], gpus=1)["id"]
        wait_until(lambda: c.job(job)["state"] == "starting", 10, what="placed")
        time.sleep(0.5)  # the server has answered the wait by now
        c.kill_agent("node-1")  # ... and the agent dies without reading it
        assert c.job(job)["state"] == "starting"
        c.start_agent("node-1", wait=False)  # the same node again (node.json)
        done = c.wait_state(job, ("succeeded", "failed"), BOUND_S + 10)
        assert done["state"] == "succeeded" and done["attempt"] == 1, done
        with open(marker) as f:
            assert f.read() == "once\n"


if __name__ == "__main__":
    run_tests([
        test_start_cancel_and_finish_reach_the_agent_long_before_the_next_heartbeat,
        test_push_survives_a_kill_9_of_the_server,
        test_wait_answers_false_at_its_time_and_refuses_other_tokens,
        test_a_wait_answer_carries_the_start_once_and_a_lost_one_comes_again_in_a_heartbeat,
        test_a_cancel_rides_the_wait_answer_as_a_stop,
        test_a_start_whose_wait_answer_the_agent_never_acted_on_runs_once,
    ])
