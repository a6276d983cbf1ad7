"""End to end: least privilege on the agent. An agent running as root runs
each job as an unprivileged user (--job-user, or a job's `user:` from
--allow-users; root only with --allow-root-jobs), in a job directory that
user owns; the job cannot read the server's admin.token or the agent's
node.json, and can use its checkpoint directory. A job's paths cannot make
the agent (root) create or read files outside its work dir.

Needs root (to create a temporary user and to switch to it): elsewhere it
exits 77, which ctest reports as skipped."""
import contextlib
import os
import pwd
import random
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

SKIP = 77
USER = f"tidepv{os.getpid() % 100000}{random.randint(0, 99)}"


def make_user(name):
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    name], check=True, capture_output=True)
    return pwd.getpwnam(name)


def drop_user(name):
    subprocess.run(["userdel", name], capture_output=True)


@contextlib.contextmanager
def cluster_for(user_flags):
    """A server and one agent whose jobs run per user_flags; the cluster's
    temp dir is made passable (0711) like any real parent of a work dir."""
    c = Cluster(agents=0)
    os.chmod(c.dir, 0o711)
    with c:
        c.start_agent("node-1", run_as=user_flags)
        yield c


def log_of(c, job_id):
    return str(c.logs(job_id))


def test_a_job_runs_as_the_job_user_and_cannot_read_the_secrets():
    pw = pwd.getpwnam(USER)
    with cluster_for(["--job-user", USER]) as c:
        work = os.path.join(c.dir, "agents", "node-1")
        admin = os.path.join(c.data, "admin.token")
        node_json = os.path.join(work, "node.json")
        script = (f"id -u; id -g; "
                  f"cat {admin} || echo NO-ADMIN; "
                  f"cat {node_json} || echo NO-NODE; "
                  f"cat $TIDE_CHECKPOINT_DIR/../../admin.token || echo NO-TRAVERSAL; "
                  f"ls {c.data} || echo NO-LIST; "
                  f"echo saved > $TIDE_CHECKPOINT_DIR/state && echo CHECKPOINT-OK; "
                  f"echo mine > $TIDE_WORK_DIR/file && echo JOBDIR-OK; echo HOME=$HOME")
        j = c.submit(command=["sh", "-c", script], gpus=1)
        done = c.wait_final([j["id"]])[j["id"]]
        log = log_of(c, j["id"])
        assert done["state"] == "succeeded", (done, log)
        words = log.replace("\\n", "\n").split()
        assert words[:2] == [str(pw.pw_uid), str(pw.pw_gid)], log
        for marker in ("NO-ADMIN", "NO-NODE", "NO-TRAVERSAL", "NO-LIST", "CHECKPOINT-OK",
                       "JOBDIR-OK"):
            assert marker in log, (marker, log)
        assert "Permission denied" in log, log
        token = open(admin).read().strip()
        assert token not in log, "the job read admin.token"
        # what it wrote belongs to it; its job dir and log are its own
        ckpt = os.path.join(c.data, "checkpoints", str(j["id"]))
        assert os.stat(os.path.join(ckpt, "state")).st_uid == pw.pw_uid
        jobdir = os.path.join(work, "jobs", str(j["id"]))
        st = os.stat(jobdir)
        assert st.st_uid == pw.pw_uid and stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
        assert stat.S_IMODE(os.stat(node_json).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(work).st_mode) == 0o711
        assert stat.S_IMODE(os.stat(c.data).st_mode) == 0o711
        assert stat.S_IMODE(os.stat(os.path.join(c.data, "tide.db")).st_mode) == 0o600


def test_root_and_unlisted_users_are_refused():
    with cluster_for(["--job-user", USER, "--allow-users", "root,daemon"]) as c:
        root = c.submit(command=["id", "-u"], gpus=1, user="root")
        other = c.submit(command=["id", "-u"], gpus=1, user="bin")
        listed = c.submit(command=["id", "-u"], gpus=1, user="daemon")
        done = c.wait_final([root["id"], other["id"], listed["id"]])
        assert done[root["id"]]["state"] == "failed", done[root["id"]]
        assert "--allow-root-jobs" in done[root["id"]]["reason"], done[root["id"]]
        assert done[other["id"]]["state"] == "failed", done[other["id"]]
        assert "not allowed" in done[other["id"]]["reason"], done[other["id"]]
        assert done[listed["id"]]["state"] == "succeeded", (done[listed["id"]],
                                                             log_of(c, listed["id"]))
        assert str(pwd.getpwnam("daemon").pw_uid) in log_of(c, listed["id"])
    with cluster_for(["--job-user", USER, "--allow-users", "root", "--allow-root-jobs"]) as c:
        root = c.submit(command=["id", "-u"], gpus=1, user="root")
        done = c.wait_final([root["id"]])[root["id"]]
        assert done["state"] == "succeeded", (done, log_of(c, root["id"]))
        assert "0" in log_of(c, root["id"]).split(), log_of(c, root["id"])


def test_a_projects_user_applies_to_its_jobs_that_name_none():
    c = Cluster(agents=0, config="projects:\n  - name: vision\n    user: daemon\n")
    os.chmod(c.dir, 0o711)
    with c:
        c.start_agent("node-1", run_as=["--job-user", USER, "--allow-users", "daemon"])
        vision = c.submit(command=["id", "-u"], gpus=0, project="vision")
        other = c.submit(command=["id", "-u"], gpus=0)
        done = c.wait_final([vision["id"], other["id"]])
        assert all(d["state"] == "succeeded" for d in done.values()), done
        assert log_of(c, vision["id"]).split() == [str(pwd.getpwnam("daemon").pw_uid)]
        assert log_of(c, other["id"]).split() == [str(pwd.getpwnam(USER).pw_uid)]
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.yaml")
        with open(bad, "w") as f:
            f.write("projects:\n  - name: vision\n    user: ../root\n")
        p = subprocess.run([os.environ["TIDE_BIN"], "server", "--config", bad, "--data",
                            os.path.join(tmp, "data"), "--listen", "127.0.0.1:1"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "projects[0].user" in p.stderr, (p.returncode, p.stderr)


def test_a_bad_user_field_is_refused_at_submit():
    with Cluster(agents=0) as c:
        status, body = c.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 0,
                                                      "user": "../root"})
        assert status == 400 and "user" in str(body), (status, body)


def test_a_workdir_outside_is_entered_as_the_job_user_never_created_by_root():
    with cluster_for(["--job-user", USER]) as c:
        private = os.path.join(c.dir, "private")      # root's, 0700
        os.mkdir(private, 0o700)
        with open(os.path.join(private, "secret"), "w") as f:
            f.write("root-only\n")
        absent = os.path.join(private, "made-by-root")
        work = os.path.join(c.dir, "agents", "node-1")
        jobs = [c.submit(command=["cat", "secret"], gpus=0, workdir=private),
                c.submit(command=["true"], gpus=0, workdir=absent),
                c.submit(command=["sh", "-c", "pwd; cat secret; ls"], gpus=0,
                         workdir=work + "/jobs/../../../private")]
        done = c.wait_final([j["id"] for j in jobs])
        for j in jobs:
            d = done[j["id"]]
            assert d["state"] == "failed", (d, log_of(c, j["id"]))
            assert "root-only" not in log_of(c, j["id"]), log_of(c, j["id"])
        assert "Permission denied" in done[jobs[0]["id"]]["reason"], done[jobs[0]["id"]]
        assert not os.path.exists(absent), "the agent created a workdir outside its work dir"


def test_links_and_fifos_a_job_leaves_do_not_steer_the_agent():
    with cluster_for(["--job-user", USER]) as c:
        outside = os.path.join(c.dir, "outside")
        with open(outside, "w") as f:
            f.write("keep me\n")
        os.chmod(outside, 0o644)
        # attempt 1 points its telemetry file at a file outside and fails;
        # attempt 2 finds a FIFO there, which the agent must not block on
        script = ('if [ "$TIDE_ATTEMPT" = 1 ]; then ln -s %s $TIDE_WORK_DIR/.fake_gpu; exit 1; '
                  'fi; rm -f $TIDE_WORK_DIR/.fake_gpu; mkfifo $TIDE_WORK_DIR/.fake_gpu; sleep 2'
                  % outside)
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=1)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "succeeded", (done, log_of(c, j["id"]))
        assert done["attempt"] == 2, done
        assert open(outside).read() == "keep me\n"
        assert os.path.exists(outside) and not os.path.islink(outside)
        assert c.node("node-1")["state"] == "ready"


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode(errors="replace")


def test_tokens_given_as_arguments_are_scrubbed_from_ps():
    with cluster_for(None) as c:
        j = c.submit(command=["sleep", "30"], gpus=0)
        c.wait_state(j["id"], "running")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TIDE_")}
        env["TIDE_BIN"] = os.environ.get("TIDE_BIN", "")
        tide = os.environ["TIDE_BIN"]
        logs = subprocess.Popen([tide, "logs", "-f", str(j["id"]), "--server", c.url,
                                 "--token", c.admin], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        agent_work = os.path.join(c.dir, "agents", "node-2")
        os.makedirs(agent_work)
        agent = subprocess.Popen([tide, "agent", "--server", c.url, "--token", c.join,
                                  "--name", "node-2", "--work", agent_work,
                                  "--fake-gpus", "1xH200:141GB", "--job-user", USER],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
        try:
            # the agent registered with the token, so it was parsed by then
            wait_until(lambda: c.node("node-2") and c.node("node-2")["state"] == "ready", 20,
                       what="node-2 registered")
            assert c.join not in cmdline(agent.pid), cmdline(agent.pid)
            assert "--token" in cmdline(agent.pid)
            # logs -f keeps running while the job does; the token is gone
            wait_until(lambda: c.admin not in cmdline(logs.pid), 10,
                       what="the token scrubbed from tide logs' arguments")
            assert logs.poll() is None, logs.stderr.read()
        finally:
            logs.kill()
            agent.kill()
            logs.wait(5)
            agent.wait(5)
        assert "visible to other users" in logs.stderr.read()
        assert "visible to other users" in agent.stderr.read()


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return not f.read().split(") ")[-1].startswith("Z")
    except OSError:
        return False


def test_a_setsid_child_of_a_killed_agent_is_gone_before_its_gpu_is_given_again():
    with Cluster(agents=0, fake_gpus="1xH200:141GB") as c:
        c.start_agent("node-1")
        marker = os.path.join(c.dir, "sleeper")
        # attempt 1 leaves a child in its own session; attempt 2 (the same
        # single GPU, after the agent's restart) checks that it is gone
        script = (f'if [ "$TIDE_ATTEMPT" = 1 ]; then setsid sleep 1000 & echo $! > {marker}; '
                  f'exec sleep 1000; fi; '
                  f'st=$(sed "s/.*) //" /proc/$(cat {marker})/stat 2>/dev/null | cut -c1); '
                  f'if [ -n "$st" ] && [ "$st" != Z ]; then echo SURVIVOR $st; exit 3; fi; '
                  f'echo CLEAN')
        j = c.submit(command=["sh", "-c", script], gpus=1)
        c.wait_state(j["id"], "running")
        wait_until(lambda: os.path.exists(marker) and open(marker).read().strip(), 10,
                   what="the setsid child's pid")
        sleeper = int(open(marker).read())
        assert alive(sleeper)
        c.kill_agent("node-1")  # kill -9: the guard kills the group, not the setsid child
        time.sleep(0.5)
        # The premise: a setsid child outlives the agent's guard. Any agent
        # starting on this machine sweeps the groups of dead agents (cgroup.c),
        # so one of a suite running alongside may have killed it already.
        swept_by_another = not alive(sleeper)
        c.start_agent("node-1")
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        log = log_of(c, j["id"])
        assert not alive(sleeper), "the setsid child survived the agent's restart"
        assert done["state"] == "succeeded" and "CLEAN" in log, (done, log)
        assert "SURVIVOR" not in log, log
        # by the cgroup of the dead agent's task where there is one, else by /proc
        agent_log = c.log("agent-node-1")
        if swept_by_another:
            print("note: another agent on this machine swept the dead agent's group first")
            return
        assert ("left by the tasks of an earlier run" in agent_log
                or "emptied and removed 1 task group" in agent_log), agent_log


def test_a_setsid_child_is_killed_when_its_task_ends():
    with Cluster(agents=1) as c:
        marker = os.path.join(c.dir, "sleeper2")
        j = c.submit(command=["sh", "-c", f"setsid sleep 1000 & echo $! > {marker}; sleep 1"],
                     gpus=1)
        done = c.wait_final([j["id"]])[j["id"]]
        assert done["state"] == "succeeded", done
        sleeper = int(open(marker).read())
        wait_until(lambda: not alive(sleeper), 10, what="the setsid child killed with its task")


def main():
    if os.geteuid() != 0:
        print("skipped: needs root to create a user and run jobs as it")
        sys.exit(SKIP)
    make_user(USER)
    try:
        run_tests([
            test_a_job_runs_as_the_job_user_and_cannot_read_the_secrets,
            test_root_and_unlisted_users_are_refused,
            test_a_projects_user_applies_to_its_jobs_that_name_none,
            test_a_bad_user_field_is_refused_at_submit,
            test_a_workdir_outside_is_entered_as_the_job_user_never_created_by_root,
            test_links_and_fifos_a_job_leaves_do_not_steer_the_agent,
            test_tokens_given_as_arguments_are_scrubbed_from_ps,
            test_a_setsid_child_of_a_killed_agent_is_gone_before_its_gpu_is_given_again,
            test_a_setsid_child_is_killed_when_its_task_ends,
        ])
    finally:
        drop_user(USER)


if __name__ == "__main__":
    main()
