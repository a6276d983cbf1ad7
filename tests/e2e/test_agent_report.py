"""End to end: the reply to a heartbeat that reports an exit carries the
start that the exit made room for (docs/api.md "Agent protocol"), so the
long-poll has nothing left to answer: one request per job fewer. A node
driven by hand, so that the heartbeat reply is the only place the start
could come from before the wait."""
import os
import signal
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402


def starts_of(out):
    return [(a["job_id"], a["attempt"]) for a in out["actions"] if a["type"] == "start"]


def test_the_exit_report_reply_carries_the_next_start_and_the_wait_stays_parked():
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]
        first = c.submit(command=["true"], gpus=1)["id"]
        second = c.submit(command=["true"], gpus=1)["id"]
        wait_until(lambda: c.job(first)["state"] == "starting", 10, what="first placed")
        assert c.job(second)["state"] == "pending"
        running = {"job_id": first, "attempt": 1, "state": "running"}
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [running]}, token=token)
        assert status == 200 and c.job(first)["state"] == "running", out
        exited = dict(running, state="exited", exit_code=0)
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [exited]}, token=token)
        assert status == 200, out
        assert [(a["job_id"], a["attempt"]) for a in out["ack"]] == [(first, 1)], out
        assert starts_of(out) == [(second, 1)], out
        start = [a for a in out["actions"] if a["type"] == "start"][0]
        assert start["gpus"] == [0] and start["command"] == ["true"], start
        # delivered with the reply: the wait has nothing to answer
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 200}, token=token)
        assert status == 200 and out["wake"] is False and "actions" not in out, out
        # and a lost reply loses nothing: the next heartbeat has it again
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": []}, token=token)
        assert status == 200 and starts_of(out) == [(second, 1)], out
        # the last exit, with nothing waiting, is answered without a start
        for state in ("running", "exited"):
            task = {"job_id": second, "attempt": 1, "state": state, "exit_code": 0}
            status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [task]},
                                    token=token)
            assert status == 200 and out["actions"] == [], out
        assert c.job(first)["state"] == "succeeded" and c.job(second)["state"] == "succeeded"


def test_a_heartbeat_older_than_one_already_read_is_refused_and_changes_nothing():
    # An agent's heartbeat that waited for the server's lock while the next
    # one (sent after the first timed out) went first: its task list, read
    # now, would take the running task for one that vanished and requeue it.
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]
        job = c.submit(command=["sleep", "60"], gpus=1)["id"]
        wait_until(lambda: c.job(job)["state"] == "starting", 10, what="the job placed")

        def heartbeat(tasks, **numbering):
            return c.request("POST", "/v1/agent/heartbeat", dict(numbering, tasks=tasks),
                             token=token)
        running = [{"job_id": job, "attempt": 1, "state": "running"}]
        status, out = heartbeat(running, run="a1", seq=2)
        assert status == 200 and c.job(job)["state"] == "running", out
        assert isinstance(out["decision"], int) and out["decision"] > 0, out
        status, out = heartbeat([], run="a1", seq=1)  # built before the task started
        assert status == 409 and "stale heartbeat" in out["error"]["message"], out
        assert c.job(job)["state"] == "running" and c.job(job)["attempt"] == 1
        status, out = heartbeat(running, run="a1", seq=3)
        assert status == 200 and out["actions"] == [], out
        status, out = heartbeat(running, run="a1", seq=3)  # the same one sent again
        assert status == 200, out
        status, out = heartbeat(running, run="b7", seq=1)  # a new run of the agent
        assert status == 200, out
        status, out = heartbeat(running)  # an agent that does not number them
        assert status == 200 and c.job(job)["state"] == "running", out
        # a cancel rides the wait answer, counted after the last reply
        last = out["decision"]
        c.api("DELETE", f"/v1/jobs/{job}")
        status, out = c.request("POST", "/v1/agent/wait", {"wait_ms": 2000}, token=token)
        assert status == 200 and out["wake"] is True, out
        assert [a["type"] for a in out["actions"]] == ["stop"], out
        assert out["decision"] > last, out
        # numbering that is not one: refused naming the field
        for bad in ({"run": "b7", "seq": "3"}, {"run": "b7", "seq": 0}, {"run": 7, "seq": 3},
                    {"run": "x" * 33, "seq": 3}, {"run": "", "seq": 3}):
            status, out = heartbeat(running, **bad)
            field = "seq" if isinstance(bad["run"], str) and 0 < len(bad["run"]) < 33 else "run"
            assert status == 400 and out["error"]["field"] == field, (bad, out)
        # "stopping" is a boolean or nothing
        status, out = heartbeat(running, run="b7", seq=9, stopping="yes")
        assert status == 400 and out["error"]["field"] == "stopping", out


def test_task_reports_that_are_not_reports_are_refused_naming_the_field():
    # Entries that were not objects became stop orders for job 0, an exit
    # code of 2^32 was read as 0 (the job succeeded), a misspelt state as
    # running.
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]
        job = c.submit(command=["true"], gpus=1)["id"]
        wait_until(lambda: c.job(job)["state"] == "starting", 10, what="the job placed")
        task = {"job_id": job, "attempt": 1, "state": "exited", "exit_code": 3}
        for bad, field in ((1, "tasks"), (dict(task, state="exitted"), "state"),
                           (dict(task, state=5), "state"),
                           (dict(task, exit_code=2 ** 32), "exit_code"),
                           (dict(task, attempt=2 ** 32 + 1), "attempt"),
                           (dict(task, job_id=-5), "job_id"), (dict(task, signal=-1), "signal"),
                           (dict(task, reason=7), "reason"), ({"state": "running"}, "job_id")):
            status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [bad]}, token=token)
            assert status == 400 and out["error"]["field"] == field, (bad, out)
        status, out = c.request("POST", "/v1/agent/heartbeat", token=token,
                                raw=b'{"tasks": [], "tasks": [{"job_id": 1}]}')
        assert status == 400 and "duplicate" in out["error"]["message"], out
        assert c.job(job)["state"] == "starting"
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [task]}, token=token)
        assert status == 200, out
        done = c.job(job)
        assert done["state"] == "failed" and done["exit_code"] == 3, done


def test_a_refused_fault_commit_leaves_what_is_stored_and_the_heartbeat_numbering():
    # A heartbeat whose GPU fault the database refuses (here a trigger the
    # test adds while the server is down: the store's file is its alone
    # while it runs) reloads the cluster: the fault, never stored, is not
    # kept in memory, and the reload still knows which heartbeat was read last.
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        token = c.register_by_hand()["node_token"]

        def heartbeat(seq, fault=None):
            gpu = {"index": 0, "memory_total_mib": 1000}
            if fault:
                gpu.update(health="fault", fault=fault, fault_seq=1)
            return c.request("POST", "/v1/agent/heartbeat",
                             {"tasks": [], "gpus": [gpu], "run": "a1", "seq": seq}, token=token)

        def gpu0():
            return c.node("hand")["gpus"][0]

        def with_server_down(sql):
            c.kill_server(signal.SIGTERM)
            db = sqlite3.connect(os.path.join(c.data, "tide.db"))
            db.execute(sql)
            db.commit()
            db.close()
            c.start_server()
        with_server_down("CREATE TRIGGER refuse_faults BEFORE INSERT ON events"
                         " WHEN NEW.kind = 'gpu_fault' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        assert heartbeat(5)[0] == 200
        status, out = heartbeat(6, fault="xid 79")
        assert status == 500, out
        assert gpu0()["healthy"] is True and gpu0()["fault"] is None, gpu0()
        status, out = heartbeat(5)  # read before the reload: still older than 6
        assert status == 409 and "stale heartbeat" in out["error"]["message"], out
        with_server_down("DROP TRIGGER refuse_faults")
        assert heartbeat(7, fault="xid 79")[0] == 200
        assert gpu0()["healthy"] is False and gpu0()["fault"] == "xid 79", gpu0()


def test_real_agents_run_a_queue_one_job_after_another_with_each_start_once():
    # One GPU, a queue of short jobs: each start comes with the previous
    # exit's reply, and none of them runs twice.
    with Cluster(agents=1, fake_gpus="1xH200:141GB") as c:
        ids = [c.submit(command=["sh", "-c", "echo run >> %s/runs.$TIDE_JOB_ID" % c.dir],
                        gpus=1)["id"] for _ in range(6)]
        for job in ids:
            assert c.wait_state(job, "succeeded", 30)["attempt"] == 1
        for job in ids:
            with open("%s/runs.%d" % (c.dir, job)) as f:
                assert f.read() == "run\n"


if __name__ == "__main__":
    run_tests([
        test_a_heartbeat_older_than_one_already_read_is_refused_and_changes_nothing,
        test_the_exit_report_reply_carries_the_next_start_and_the_wait_stays_parked,
        test_task_reports_that_are_not_reports_are_refused_naming_the_field,
        test_a_refused_fault_commit_leaves_what_is_stored_and_the_heartbeat_numbering,
        test_real_agents_run_a_queue_one_job_after_another_with_each_start_once,
    ])
