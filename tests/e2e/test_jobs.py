"""End to end: mixed job sizes, failures, max_runtime, cancel, logs, restarts."""
import http.client
import os
import signal
import socket
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, processes_with_env, run_tests, wait_until  # noqa: E402
from relay import Relay  # noqa: E402


def test_fifty_mixed_jobs_finish_with_their_exit_codes_and_logs():
    with Cluster(agents=2) as c:
        sizes = [0, 1, 2, 4]
        ids = {}
        for i in range(50):
            gpus = sizes[i % 4]
            code = 3 if i % 10 == 7 else 0
            script = (f'echo "job {i} gpus=$CUDA_VISIBLE_DEVICES id=$TIDE_JOB_ID"; '
                      f'echo "to stderr {i}" >&2; sleep 0.{i % 5}; exit {code}')
            j = c.submit(name=f"mixed-{i}", gpus=gpus, command=["sh", "-c", script])
            ids[j["id"]] = (i, gpus, code)
        final = c.wait_final(ids, timeout=180)
        for job_id, (i, gpus, code) in ids.items():
            j = final[job_id]
            want = "failed" if code else "succeeded"
            assert j["state"] == want, (job_id, j)
            assert j["exit_code"] == code, j
            assert len(j["gpus"]) == gpus, j
            log = c.logs(job_id)
            assert f"job {i} gpus=" in log and f"id={job_id}" in log, log
            assert f"to stderr {i}" in log, log
            visible = log.split("gpus=")[1].split(" ")[0]
            assert len([g for g in visible.split(",") if g]) == gpus, log
            if code:
                assert j["reason"] == "exit 3", j


def test_job_past_max_runtime_ends_timeout():
    with Cluster(agents=1) as c:
        j = c.submit(command=["sleep", "60"], gpus=1, max_runtime=1)
        done = c.wait_final([j["id"]], timeout=30)[j["id"]]
        assert done["state"] == "timeout", done
        assert "max_runtime" in done["reason"], done


def test_cancel_kills_the_whole_process_group():
    with Cluster(agents=1) as c:
        marker = f"cancel-{os.getpid()}-{time.time()}"
        j = c.submit(command=["sh", "-c", "sleep 300 & sleep 300 & echo started; wait"],
                     env={"TIDE_TEST_MARKER": marker}, gpus=1)
        c.wait_state(j["id"], "running")
        wait_until(lambda: len(processes_with_env("TIDE_TEST_MARKER", marker)) >= 3, 10,
                   what="the job's three processes")
        c.api("DELETE", f"/v1/jobs/{j['id']}")
        done = c.wait_final([j["id"]], timeout=30)[j["id"]]
        assert done["state"] == "cancelled", done
        wait_until(lambda: not processes_with_env("TIDE_TEST_MARKER", marker), 10,
                   what="no process of the cancelled job left")
        status, body = c.request("DELETE", f"/v1/jobs/{j['id']}")
        assert status == 409, (status, body)


def test_pending_job_is_cancelled_at_once():
    with Cluster(agents=1, fake_gpus="1xT4:16GB") as c:
        blocker = c.submit(command=["sleep", "30"], gpus=1)
        c.wait_state(blocker["id"], "running")
        waiting = c.submit(command=["true"], gpus=1)
        assert c.job(waiting["id"])["state"] == "pending"
        out = c.api("DELETE", f"/v1/jobs/{waiting['id']}")
        assert out["state"] == "cancelled", out
        pending = wait_until(lambda: c.job(blocker["id"]).get("state") == "running", 5)
        assert pending


def test_job_that_fits_nowhere_is_refused_with_a_reason():
    with Cluster(agents=1, fake_gpus="2xA100:80GB") as c:
        status, out = c.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 4})
        assert status == 400 and out["error"]["field"] == "gpus", out
        assert "4 GPUs" in out["error"]["message"], out
        status, out = c.request("POST", "/v1/jobs",
                                {"command": ["true"], "gpus": 1, "gpu_model": "H100*"})
        assert status == 400 and "H100*" in out["error"]["message"], out
        assert c.jobs() == []


def test_environment_of_a_task():
    with Cluster(agents=1) as c:
        j = c.submit(command=["sh", "-c", 'echo "A=$TIDE_ATTEMPT W=$TIDE_WORK_DIR N=$NVIDIA_VISIBLE_DEVICES X=$MYVAR"; pwd'],
                     env={"MYVAR": "hello"}, gpus=2)
        c.wait_final([j["id"]])
        log = c.logs(j["id"])
        assert "A=1 " in log and "X=hello" in log, log
        workdir = log.split("W=")[1].split(" ")[0]
        assert workdir.rstrip("/").endswith(str(j["id"])), log
        assert log.strip().splitlines()[-1].rstrip("/") == workdir.rstrip("/"), log
        assert "N=" in log and log.split("N=")[1].split(" ")[0].count(",") == 1, log


def test_logs_follow_streams_until_the_job_ends():
    with Cluster(agents=1) as c:
        j = c.submit(command=["sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.5; done"], gpus=0)
        c.wait_state(j["id"], ("running", "succeeded"))
        p = c.cli("logs", "-f", str(j["id"]), check=True, timeout=30)
        assert p.stdout.splitlines()[-3:] == ["line1", "line2", "line3"], p.stdout
        assert c.job(j["id"])["state"] == "succeeded"


OUTSIDE_CLIENT = "127.0.0.2"  # counted against the per-address cap, unlike 127.0.0.1
PER_IP_LIMIT = 64  # src/server/http_guard.h


def test_a_dropped_follow_of_a_silent_job_ends_with_its_thread_and_connection():
    """A follow waits for output of a job that prints none (here a pending
    one); a client that drops it must not leave its thread and socket held
    until the job prints: the per-address cap's worth of follows dropped
    leaves the server's threads as they were, and the address is served."""
    with Cluster(agents=0) as c:
        job = c.submit(gpus=1, command=["true"])  # no node: it waits, silent

        def threads():
            return len(os.listdir(f"/proc/{c.server.pid}/task"))
        before = threads()
        follows = []
        for _ in range(PER_IP_LIMIT):
            s = socket.create_connection(("127.0.0.1", c.port), timeout=10,
                                         source_address=(OUTSIDE_CLIENT, 0))
            s.sendall(f"GET /v1/jobs/{job['id']}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {c.admin}\r\n\r\n".encode())
            follows.append(s)
        for s in follows:  # the headers come at once; the body waits for output
            assert s.recv(64).startswith(b"HTTP/1.1 200"), "a follow answered"
        # a thread per follow (the server's own come and go by a few)
        assert threads() >= PER_IP_LIMIT, (before, threads())
        for s in follows:
            s.close()
        wait_until(lambda: threads() <= before + 2, 10, 0.2,
                   what=f"the dropped follows' threads gone ({before} before)")
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=10,
                                          source_address=(OUTSIDE_CLIENT, 0))
        conn.request("GET", "/v1/jobs", headers={"Authorization": f"Bearer {c.admin}"})
        assert conn.getresponse().status == 200
        conn.close()
        assert c.job(job["id"])["state"] == "pending"


def test_server_killed_while_jobs_run_loses_nothing_and_runs_nothing_twice():
    with Cluster(agents=2) as c:
        runs = os.path.join(c.dir, "runs")
        os.makedirs(runs)
        ids = []
        for i in range(12):
            script = f'echo "$TIDE_JOB_ID $TIDE_ATTEMPT" >> {runs}/$TIDE_JOB_ID; sleep 3; echo done'
            ids.append(c.submit(command=["sh", "-c", script], gpus=1 + i % 2)["id"])
        wait_until(lambda: len([j for j in c.jobs() if j["state"] == "running"]) >= 4, 20,
                   what="some jobs running")
        c.kill_server(signal.SIGKILL)
        time.sleep(1.5)  # agents keep their tasks running while the server is away
        c.start_server()
        late = c.submit(command=["sh", "-c", f'echo "$TIDE_JOB_ID $TIDE_ATTEMPT" >> {runs}/$TIDE_JOB_ID'], gpus=1)
        ids.append(late["id"])
        final = c.wait_final(ids, timeout=120)
        for job_id in ids:
            assert final[job_id]["state"] == "succeeded", final[job_id]
            with open(os.path.join(runs, str(job_id))) as f:
                lines = f.read().splitlines()
            assert len(lines) == 1, (job_id, lines)
            assert final[job_id]["attempt"] == 1, final[job_id]


def test_killed_agent_jobs_are_requeued_and_finish_elsewhere():
    with Cluster(agents=2, node_timeout_ms=2000) as c:
        ids = [c.submit(command=["sh", "-c", "sleep 4; echo ok"], gpus=2, retries=2)["id"]
               for _ in range(4)]
        running = wait_until(lambda: [j for j in c.jobs() if j["state"] == "running"
                                      and j["node"] == "node-1"], 20, what="jobs on node-1")
        moved = [j["id"] for j in running]
        c.kill_agent("node-1")
        wait_until(lambda: c.node("node-1")["state"] == "lost", 15, what="node-1 lost")
        final = c.wait_final(ids, timeout=120)
        for job_id in ids:
            assert final[job_id]["state"] == "succeeded", final[job_id]
        for job_id in moved:
            assert final[job_id]["node"] == "node-2", final[job_id]
            assert final[job_id]["attempt"] == 2, final[job_id]
        events = c.api("GET", f"/v1/events?job={moved[0]}")["events"]
        assert any(e["kind"] == "job_requeued" and "node lost" in e["message"] for e in events), events


def test_a_job_its_stopped_agent_stopped_is_requeued_even_when_it_exits_0():
    # An agent stopped (a restart, a machine going down) stops its tasks; a
    # job that checkpoints on SIGTERM and exits 0 is not done: it resumes.
    with Cluster(agents=1, kill_grace_s=5) as c:
        script = 'trap "echo checkpointed; exit 0" TERM; echo up; while :; do sleep 0.2; done'
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=0)
        c.wait_state(j["id"], "running")
        wait_until(lambda: "up" in c.logs(j["id"]), 20, what="the job running its loop")
        c.kill_agent("node-1", signal.SIGTERM)
        job = wait_until(lambda: (x := c.job(j["id"]))["state"] == "pending" and x, 20,
                         what="the job requeued")
        events = c.api("GET", f"/v1/events?job={j['id']}")["events"]
        assert any(e["kind"] == "job_requeued" and "agent stopped (exit 0)" in e["message"]
                   for e in events), events
        assert c.node("node-1")["state"] == "stopping"  # until its next run heartbeats
        c.start_agent("node-1")
        job = wait_until(lambda: (x := c.job(j["id"]))["state"] == "running" and x, 30,
                         what="the job running again")
        assert job["attempt"] == 2, job  # none was placed on the stopping node
        back = c.api("GET", "/v1/events?kind=node_back")["events"]
        assert [e["message"] for e in back] == ["its agent runs again"], back
        c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_a_stopping_agents_node_takes_no_new_work_and_is_not_lost_while_its_job_checkpoints():
    # An agent stopped while its job checkpoints for longer than the node
    # timeout heartbeats through the grace: its node is not lost (which
    # would start the job elsewhere while it still checkpoints), and it says
    # it is stopping, so a job submitted meanwhile goes to the other node.
    with Cluster(agents=0, node_timeout_ms=2000, kill_grace_s=8) as c:
        c.start_agent("node-1")
        runs = os.path.join(c.dir, "runs")
        script = (f'trap "echo $TIDE_ATTEMPT saving >> {runs}; sleep 4; '
                  f'echo $TIDE_ATTEMPT saved >> {runs}; exit 0" TERM; '
                  f'echo $TIDE_ATTEMPT up >> {runs}; while :; do sleep 0.2; done')
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=0)
        c.wait_state(j["id"], "running")
        wait_until(lambda: os.path.exists(runs), 20, what="the job running its loop")
        c.start_agent("node-2")
        stopped = c.agents.pop("node-1")
        os.killpg(stopped.pid, signal.SIGTERM)
        wait_until(lambda: c.node("node-1")["state"] == "stopping", 10, what="node-1 stopping")
        # node-1 has three GPUs free and binpack prefers it, were it ready
        late = c.submit(command=["true"], gpus=1)
        done = c.wait_final([late["id"]], timeout=30)[late["id"]]
        assert done["state"] == "succeeded" and done["node"] == "node-2", done
        assert done["attempt"] == 1, done
        stopped.wait(15)
        with open(runs) as f:
            lines = f.read().splitlines()
        assert lines[:3] == ["1 up", "1 saving", "1 saved"], lines  # attempt 2 after the save
        job = wait_until(lambda: (x := c.job(j["id"]))["state"] == "running" and x, 20,
                         what="the job running again on node-2")
        assert job["node"] == "node-2" and job["attempt"] == 2, job
        events = c.api("GET", f"/v1/events?job={j['id']}")["events"]
        requeues = [e["message"] for e in events if e["kind"] == "job_requeued"]
        assert len(requeues) == 1 and "agent stopped (exit 0)" in requeues[0], requeues
        # once its agent is gone, the node is lost as such
        wait_until(lambda: c.node("node-1")["state"] == "lost", 10, what="node-1 lost")
        kinds = {e["kind"]: e["message"] for e in c.api("GET", "/v1/events?kind=node_lost")["events"]}
        assert "its agent stopped" in kinds.get("node_lost", ""), kinds
        stopping = c.api("GET", "/v1/events?kind=node_stopping")["events"]
        assert [e["node"] for e in stopping] == ["node-1"], stopping
        c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_a_jobs_own_path_finds_its_program():
    # A venv's python first on the job's PATH: that one runs, not the
    # agent's (the agent looked the program up on its own PATH).
    with Cluster(agents=1) as c:
        venv = os.path.join(c.dir, "venv-bin")
        os.makedirs(venv)
        prog = os.path.join(venv, "id")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\necho the-venvs-own\n")
        os.chmod(prog, 0o755)
        j = c.submit(command=["id"], gpus=0, env={"PATH": f"{venv}:/usr/bin:/bin"})
        assert c.wait_final([j["id"]])[j["id"]]["state"] == "succeeded"
        assert "the-venvs-own" in c.logs(j["id"]), c.logs(j["id"])


def test_a_job_whose_log_outgrows_the_agents_cap_is_killed():
    # --max-log-mib: a job printing without end would fill the node's disk
    with Cluster(agents=0) as c:
        c.start_agent("node-1", extra=["--max-log-mib", "1"])
        big = c.submit(command=["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; sleep 60"],
                       gpus=0)
        small = c.submit(command=["sh", "-c", "head -c 500000 /dev/zero | tr '\\0' a; echo; echo ok"],
                         gpus=0)
        final = c.wait_final([big["id"], small["id"]], timeout=60)
        assert final[big["id"]]["state"] == "failed", final[big["id"]]
        assert final[big["id"]]["reason"].startswith("log over 1 MiB"), final[big["id"]]
        assert final[small["id"]]["state"] == "succeeded", final[small["id"]]


def test_whole_log_arrives_after_a_fast_exit_even_full_of_control_bytes():
    with Cluster(agents=1) as c:
        big = c.submit(command=["python3", "-c",
                                "import sys; sys.stdout.write('x' * 299999 + '\\nLAST LINE\\n')"],
                       gpus=0)
        noisy = c.submit(command=["python3", "-c",
                                  "import sys; sys.stdout.write('\\x01' * 700000 + '\\nEND\\n')"],
                         gpus=0)
        final = c.wait_final([big["id"], noisy["id"]], timeout=60)
        assert all(f["state"] == "succeeded" for f in final.values()), final

        def whole(job_id, size):
            out = c.cli("logs", str(job_id), check=True).stdout
            return out if len(out) == size else False
        text = wait_until(lambda: whole(big["id"], 300010), 30, what="the big log")
        assert text.endswith("x\nLAST LINE\n"), text[-40:]
        text = wait_until(lambda: whole(noisy["id"], 700005), 30, what="the noisy log")
        assert text.endswith("\x01\nEND\n"), repr(text[-20:])
        assert c.node("node-1")["state"] == "ready"  # its heartbeats were never refused
        agent_log = c.log("agent-node-1")
        assert "HTTP 413" not in agent_log and "body over" not in agent_log, agent_log[-2000:]


def test_a_jobs_directories_are_spares_made_ahead_and_renamed_into_place():
    with Cluster(agents=1) as c:
        checkpoints = os.path.join(c.data, "checkpoints")
        jobs = os.path.join(c.dir, "agents", "node-1", "jobs")

        def spares(parent):
            return {os.lstat(os.path.join(parent, n)).st_ino for n in os.listdir(parent)
                    if n.startswith(".spare-")}
        # made once the pools have seen no take for a moment, on a free CPU;
        # full pools (the server's 256, 2 per GPU on the agent) make no more
        wait_until(lambda: len(spares(checkpoints)) == 256 and len(spares(jobs)) == 8, 120,
                   what="full pools of spare job and checkpoint directories")
        ahead = spares(checkpoints), spares(jobs)
        j = c.submit(command=["sh", "-c", "pwd; echo kept > $TIDE_CHECKPOINT_DIR/state"], gpus=1)
        done = c.wait_final([j["id"]])[j["id"]]
        assert done["state"] == "succeeded", done
        for parent, made in zip((checkpoints, jobs), ahead):
            st = os.lstat(os.path.join(parent, str(j["id"])))
            assert st.st_ino in made, (parent, st.st_ino, made)
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
        with open(os.path.join(checkpoints, str(j["id"]), "state")) as f:
            assert f.read() == "kept\n"
        assert os.path.join(jobs, str(j["id"])) in c.logs(j["id"])


def test_a_jobs_directory_goes_once_kept_but_not_what_its_links_point_to():
    with Cluster(agents=0) as c:
        c.start_agent("node-1", extra=["--job-dir-keep-s", "1"])
        outside = os.path.join(c.dir, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "precious"), "w") as f:
            f.write("keep me")
        # scratch files, a directory left read-only, links out of the tree
        j = c.submit(command=["sh", "-c", f"echo data > out; mkdir -p a/b; echo x > a/b/y; "
                                          f"ln -s {outside} dir-link; "
                                          f"ln -s {outside}/precious file-link; chmod 500 a"],
                     gpus=1)
        done = c.wait_final([j["id"]])[j["id"]]
        assert done["state"] == "succeeded", done
        job_dir = os.path.join(c.dir, "agents", "node-1", "jobs", str(j["id"]))
        wait_until(lambda: not os.path.lexists(job_dir), 30,
                   what="the job's directory removed a second after its task was done")
        with open(os.path.join(outside, "precious")) as f:
            assert f.read() == "keep me"
        jobs = os.listdir(os.path.dirname(job_dir))
        assert ".ran" in jobs and not [n for n in jobs if n.startswith((".trash-", ".kept-"))], jobs


def test_old_finished_jobs_and_events_are_forgotten_with_their_files():
    config = "retention:\n  finished_jobs_s: 2\n  events_s: 6\n  sweep_s: 1\n"
    with Cluster(agents=1, config=config) as c:
        done = c.submit(command=["sh", "-c", "echo bye"], gpus=1)
        waiting = c.submit(command=["sleep", "60"], gpus=1)  # unfinished all along
        c.wait_final([done["id"]])
        logs = os.path.join(c.data, "logs", str(done["id"]))
        checkpoints = os.path.join(c.data, "checkpoints", str(done["id"]))
        assert os.path.isdir(logs) and os.path.isdir(checkpoints)
        agent_log = os.path.join(c.dir, "agents", "node-1", "logs", f"{done['id']}.1.log")
        wait_until(lambda: not os.path.exists(agent_log), 20,
                   what="the agent's copy of a delivered log removed")

        def forgotten():
            status, _ = c.request("GET", f"/v1/jobs/{done['id']}")
            return status == 404
        wait_until(forgotten, 20, what="the finished job forgotten")
        # Its files go right after its rows, outside the server's lock.
        wait_until(lambda: not os.path.exists(logs) and not os.path.exists(checkpoints), 10,
                   what="its log and checkpoint directories removed")
        assert c.job(waiting["id"])["state"] in ("starting", "running")  # unfinished jobs stay
        assert not c.api("GET", f"/v1/events?job={done['id']}")["events"]
        wait_until(lambda: not any(e["kind"] == "node_registered" for e in
                                   c.api("GET", "/v1/events")["events"]), 20,
                   what="the old node event forgotten")


def test_frozen_nodes_job_without_retries_runs_elsewhere_and_finishes_once():
    with Cluster(agents=1, node_timeout_ms=1500) as c:
        ends = os.path.join(c.dir, "ends")
        j = c.submit(command=["sh", "-c", f"sleep 8; echo attempt-$TIDE_ATTEMPT >> {ends}"],
                     gpus=1)  # retries: 0, the default
        c.wait_state(j["id"], "running")
        frozen = c.agents["node-1"]
        os.killpg(frozen.pid, signal.SIGSTOP)  # heartbeats stop; its task runs on
        c.start_agent("node-2")
        wait_until(lambda: c.node("node-1")["state"] == "lost", 15, what="node-1 lost")
        wait_until(lambda: c.job(j["id"])["attempt"] == 2, 15, what="the job placed again")
        os.killpg(frozen.pid, signal.SIGCONT)  # wakes past its node timeout: fences
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "succeeded" and done["node"] == "node-2", done
        assert done["attempt"] == 2, done
        time.sleep(1)
        with open(ends) as f:
            assert f.read().split() == ["attempt-2"], "the job finished once, on node-2"
        assert "fenced" in c.log("agent-node-1"), c.log("agent-node-1")
        events = c.api("GET", f"/v1/events?job={j['id']}")["events"]
        assert any(e["kind"] == "job_requeued" and "without using a retry" in e["message"]
                   for e in events), events


def test_an_answer_that_came_back_late_does_not_keep_a_cut_off_node_running():
    # The server counts a node's silence from when a heartbeat arrived; the
    # agent must count from when it sent it, not from when the answer came
    # back: here the answers are held 2 s, then the network breaks, so an
    # agent counting from the answer would run its task on for about 2 s
    # after the server gave the job to another node.
    with Cluster(agents=0, node_timeout_ms=3000, fake_gpus="1xH200:141GB") as c:
        alive = os.path.join(c.dir, "alive-1")
        second = os.path.join(c.dir, "started-2")
        relay = Relay(int(c.agent_url.rsplit(":", 1)[1]))
        direct_url, c.agent_url = c.agent_url, relay.url
        c.start_agent("node-1")
        c.agent_url = direct_url
        try:
            j = c.submit(command=["sh", "-c", 'if [ "$TIDE_ATTEMPT" = 1 ]; then '
                                  f'while :; do date +%s.%N >> {alive}; sleep 0.05; done; '
                                  f'else date +%s.%N > {second}; fi'], gpus=1)
            c.wait_state(j["id"], "running")
            c.start_agent("node-2")  # idle, ready for the job once node-1 is lost
            relay.hold_then_cut(2.0)
            done = c.wait_final([j["id"]], timeout=60)[j["id"]]
            assert done["state"] == "succeeded" and done["node"] == "node-2", done
            wait_until(lambda: "fenced" in c.log("agent-node-1"), 15, what="node-1 fenced")
            time.sleep(0.5)
            with open(alive) as f:
                last_alive = max(float(t) for t in f.read().split())
            with open(second) as f:
                started = float(f.read())
            assert last_alive < started, \
                f"attempt 1 ran {last_alive - started:.2f} s past attempt 2's start"
        finally:
            relay.close()


def test_a_gang_part_that_ended_is_not_run_again_after_a_server_kill():
    # Rank 1 ends at once, rank 0 runs on; the server is killed and started
    # again before rank 0 ends. What the ended part did was stored before
    # its exit was acknowledged: it is not started again, and the gang ends
    # when rank 0 does.
    with Cluster(agents=2, fake_gpus="1xH200:141GB") as c:
        runs = os.path.join(c.dir, "runs")
        gate = os.path.join(c.dir, "gate")
        script = (f'echo "$TIDE_GANG_RANK" >> {runs}; '
                  f'if [ "$TIDE_GANG_RANK" = 0 ]; then while [ ! -e {gate} ]; do sleep 0.1; done; fi')
        j = c.submit(command=["sh", "-c", script], gpus=2, nodes=2)
        wait_until(lambda: os.path.exists(runs) and sorted(open(runs).read().split()) == ["0", "1"],
                   20, what="both ranks started")
        time.sleep(1.5)  # rank 1's exit reported and acknowledged (heartbeats every 300 ms)
        c.kill_server(signal.SIGKILL)
        c.start_server()
        time.sleep(2)  # heartbeats from both agents to the new server
        open(gate, "w").close()
        done = c.wait_final([j["id"]], timeout=30)[j["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 1, done
        with open(runs) as f:
            assert sorted(f.read().split()) == ["0", "1"], "each rank ran once"


def test_paused_server_declares_no_node_lost_and_uses_no_retry():
    with Cluster(agents=2, node_timeout_ms=2000) as c:
        ends = os.path.join(c.dir, "ends")
        ids = [c.submit(command=["sh", "-c", f"sleep 6; echo {i} >> {ends}"], gpus=1)["id"]
               for i in range(4)]
        for job_id in ids:
            c.wait_state(job_id, "running")
        os.killpg(c.server.pid, signal.SIGSTOP)
        time.sleep(3)  # past the node timeout: agents fence, nothing may run twice
        os.killpg(c.server.pid, signal.SIGCONT)
        final = c.wait_final(ids, timeout=90)
        for job_id in ids:
            assert final[job_id]["state"] == "succeeded", final[job_id]
        kinds = [e["kind"] for e in c.api("GET", "/v1/events?limit=100000")["events"]]
        assert "node_lost" not in kinds, kinds
        time.sleep(1)
        with open(ends) as f:
            assert sorted(f.read().split()) == [str(i) for i in range(4)], "each job once"


def test_restarted_agent_reconciles_and_reruns_lost_tasks():
    with Cluster(agents=1) as c:
        j = c.submit(command=["sh", "-c", "sleep 2; echo fine"], gpus=1, retries=1)
        c.wait_state(j["id"], "running")
        c.kill_agent("node-1")
        c.start_agent("node-1")
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 2, done


if __name__ == "__main__":
    run_tests([
        test_fifty_mixed_jobs_finish_with_their_exit_codes_and_logs,
        test_job_past_max_runtime_ends_timeout,
        test_cancel_kills_the_whole_process_group,
        test_pending_job_is_cancelled_at_once,
        test_job_that_fits_nowhere_is_refused_with_a_reason,
        test_environment_of_a_task,
        test_logs_follow_streams_until_the_job_ends,
        test_a_dropped_follow_of_a_silent_job_ends_with_its_thread_and_connection,
        test_server_killed_while_jobs_run_loses_nothing_and_runs_nothing_twice,
        test_killed_agent_jobs_are_requeued_and_finish_elsewhere,
        test_a_job_its_stopped_agent_stopped_is_requeued_even_when_it_exits_0,
        test_a_stopping_agents_node_takes_no_new_work_and_is_not_lost_while_its_job_checkpoints,
        test_a_jobs_own_path_finds_its_program,
        test_a_job_whose_log_outgrows_the_agents_cap_is_killed,
        test_whole_log_arrives_after_a_fast_exit_even_full_of_control_bytes,
        test_a_jobs_directories_are_spares_made_ahead_and_renamed_into_place,
        test_a_jobs_directory_goes_once_kept_but_not_what_its_links_point_to,
        test_old_finished_jobs_and_events_are_forgotten_with_their_files,
        test_frozen_nodes_job_without_retries_runs_elsewhere_and_finishes_once,
        test_an_answer_that_came_back_late_does_not_keep_a_cut_off_node_running,
        test_a_gang_part_that_ended_is_not_run_again_after_a_server_kill,
        test_paused_server_declares_no_node_lost_and_uses_no_retry,
        test_restarted_agent_reconciles_and_reruns_lost_tasks,
    ])
