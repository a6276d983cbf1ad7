"""End to end: the user journey of submitting and cancelling. The README's
first example run verbatim, jobs running in their submit directory, jobs
that could never run refused at submit, `tide submit --wait` (its JSON and
exit status), `--nodes`, and `tide cancel` with ranges, lists and filters."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, Cluster, run_tests, wait_until  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_commands():
    """The `tide ...` lines of the README's "Using it" example, comments dropped."""
    text = open(os.path.join(REPO, "README.md")).read()
    section = text[text.index("## Using it"):]
    block = section[section.index("```sh") + 5:]
    block = block[:block.index("```")]
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    assert "cd examples/quickstart" in lines, lines
    return [line for line in lines if line.startswith("tide ")]


def shell(c, line, cwd):
    """Runs a README line as a user would: a shell, tide on PATH, the
    cluster in TIDE_SERVER/TIDE_TOKEN."""
    env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin,
               PATH=os.path.dirname(TIDE) + os.pathsep + os.environ.get("PATH", ""))
    assert os.path.basename(TIDE) == "tide", TIDE
    return subprocess.run(["sh", "-c", line], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def submitted_id(p):
    m = re.search(r"submitted job (\d+)", p.stdout)
    assert m and p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return int(m.group(1))


def test_readme_first_examples_run_verbatim_in_the_submit_directory():
    with Cluster(agents=1, fake_gpus="4xH200:141GB") as c:
        submit_dir = os.path.join(c.dir, "quickstart")
        shutil.copytree(os.path.join(REPO, "examples", "quickstart"), submit_dir)
        cmds = [line for line in readme_commands() if line.startswith("tide submit")]
        assert cmds[0] == "tide submit --gpus 2 --max-runtime 600 -- python3 train.py", cmds
        assert cmds[1] == "tide submit job.yaml", cmds
        first = submitted_id(shell(c, cmds[0], submit_dir))
        from_yaml = submitted_id(shell(c, cmds[1], submit_dir))
        final = c.wait_final([first, from_yaml], 60)
        for job_id in (first, from_yaml):
            job, log = final[job_id], c.logs(job_id)
            assert job["state"] == "succeeded", (job, log)
            assert job["spec"]["workdir"] == submit_dir, job["spec"]
            assert f"train.py in {submit_dir}\n" in log and "done\n" in log, log
        assert len(final[first]["gpus"]) == 2, final[first]
        assert "epoch 5/5" in c.logs(from_yaml)
        # The README's other lines, its example id 12 standing for a real one.
        rest = {("--wait" if "--wait" in line else line.split()[1]): line
                for line in readme_commands()[2:]}
        assert set(rest) >= {"--wait", "jobs", "show", "logs", "cancel", "nodes"}, rest
        p = shell(c, rest["--wait"], submit_dir)
        assert p.returncode == 0 and "succeeded" in p.stdout, (p.returncode, p.stdout, p.stderr)
        assert "train-yaml" in shell(c, rest["jobs"], submit_dir).stdout
        show = shell(c, rest["show"].replace("12", str(first)), submit_dir)
        assert show.returncode == 0 and "succeeded" in show.stdout, show
        logs = shell(c, rest["logs"].replace("12", str(from_yaml)), submit_dir)
        assert logs.returncode == 0 and "epoch 5/5" in logs.stdout, logs
        nodes = shell(c, rest["nodes"], submit_dir)
        assert nodes.returncode == 0 and "node-1" in nodes.stdout, nodes
        pending = c.submit(command=["sleep", "60"], gpus=1, workdir=submit_dir)
        cancel = shell(c, rest["cancel"].replace("12", str(pending["id"])), submit_dir)
        assert cancel.returncode == 0, cancel
        assert c.wait_final([pending["id"]])[pending["id"]]["state"] == "cancelled"
        # --workdir still picks another directory.
        other = os.path.join(c.dir, "elsewhere")
        os.makedirs(other)
        shutil.copy(os.path.join(submit_dir, "train.py"), other)
        p = c.cli("submit", "--workdir", other, "--", "python3", "train.py", "--epochs", "1")
        job_id = submitted_id(p)
        c.wait_final([job_id])
        assert f"train.py in {other}\n" in c.logs(job_id), c.logs(job_id)


def test_job_whose_directory_is_missing_on_the_node_fails_saying_so():
    with Cluster(agents=1) as c:
        gone = os.path.join(c.dir, "not-on-this-node")
        j = c.submit(command=["true"], gpus=1, workdir=gone)
        job = c.wait_final([j["id"]])[j["id"]]
        assert job["state"] == "failed", job
        assert f"workdir {gone}" in job["reason"] and "No such file" in job["reason"], job
        assert f"workdir {gone}" in c.logs(j["id"]), c.logs(j["id"])
        # Through the CLI, with --wait: the start failure's exit status.
        p = c.cli("submit", "--wait", "--workdir", gone, "--", "true")
        assert p.returncode == 127 and f"workdir {gone}" in p.stdout, (p.returncode, p.stdout)


def expect_refused(c, field, parts, **spec):
    status, out = c.request("POST", "/v1/jobs", dict(command=["true"], **spec))
    assert status == 400, (status, out, spec)
    err = out["error"]
    assert err["field"] == field, (err, spec)
    for part in parts:
        assert part in err["message"], (part, err)
    return err


def test_jobs_that_could_never_run_are_refused_at_submit_naming_the_field():
    with Cluster(agents=2, fake_gpus="4xH200:141GB") as c:
        expect_refused(c, "gpus", ["8 GPUs", "the largest has 4", "nodes"], gpus=8)
        expect_refused(c, "gpu_model", ["V100*", "H200"], gpus=1, gpu_model="V100*")
        expect_refused(c, "gpu_memory", ["200000 MiB", "the largest has"], gpus=1,
                       gpu_memory=200000)
        expect_refused(c, "cpus", ["4096 CPUs"], gpus=1, cpus=4096)
        expect_refused(c, "gpus", ["12 GPUs", "up to 2 nodes"], gpus=12, nodes=2)
        assert c.jobs() == []  # nothing was stored
        p = c.cli("submit", "--gpus", "8", "--", "true")
        assert p.returncode != 0 and "gpus" in p.stderr and "--gpus" in p.stderr, p.stderr
        p = c.cli("submit", "--gpu-model", "V100*", "--", "true")
        assert p.returncode != 0 and "gpu_model" in p.stderr, p.stderr
        # A gang over both nodes can run; so can a job that only has to wait.
        gang = c.submit(command=["true"], gpus=8, nodes=2)
        blocker = c.submit(command=["sleep", "30"], gpus=4)
        c.wait_state(blocker["id"], "running")
        c.wait_final([gang["id"]])
        c.submit(command=["sleep", "30"], gpus=4)
        waiting = c.submit(command=["true"], gpus=4)
        job = wait_until(lambda: (x := c.job(waiting["id"])).get("pending_reason") and x, 10)
        # it waits for a node's 4 GPUs: held for it as they free (backfill),
        # the jobs there giving no runtime
        assert job["state"] == "pending" and "reserved 4 GPUs" in job["pending_reason"], job
        assert "CPU" not in job["pending_reason"] and "memory" not in job["pending_reason"], job
        c.cli("cancel", "--state", "running", check=True)
        c.cli("cancel", "--state", "pending", check=True)


def test_nothing_is_refused_before_any_node_registers_and_a_pool_may_grow_to_fit():
    with Cluster(agents=0) as c:
        early = c.submit(command=["true"], gpus=8)  # no node and no pool yet: accepted
        c.start_agent("node-1", "2xA100:80GB")
        expect_refused(c, "gpus", ["the largest has 2 (node node-1)"], gpus=4)
        assert c.job(early["id"])["state"] == "pending"
    pool = ("pools:\n  - name: big\n    gpu: H200\n    gpus_per_node: 8\n"
            "    gpu_memory_mib: 144384\n    provider: exec\n    program: /bin/false\n"
            "    min_nodes: 0\n    max_nodes: 2\n")
    with Cluster(agents=1, fake_gpus="2xA100:80GB", config=pool) as c:
        c.submit(command=["true"], gpus=8, gpu_model="H200")  # a node of pool big could
        c.submit(command=["true"], gpus=16, nodes=2)          # two of them could
        expect_refused(c, "gpus", ["16 GPUs", "the largest has 8 (pool big)"], gpus=16)
        expect_refused(c, "gpu_model", ["V100*", "A100", "H200"], gpus=1, gpu_model="V100*")


# What only the in-memory queue knows; GET adds it, the submit answer does not.
LIVE_FIELDS = {"pending_reason", "effective_priority", "escalated", "reservation", "preemptions",
               "eta", "gang_nodes"}


def as_stored(job):
    return {k: v for k, v in job.items() if k not in LIVE_FIELDS}


def test_the_submit_answer_is_the_job_as_stored():
    """The 201 is built from the job just inserted, not read back: it must
    say what GET /v1/jobs/{id} then reads from the database."""
    with Cluster(agents=0) as c:
        user = c.api("POST", "/v1/tokens", {"name": "dana", "projects": ["vision"]},
                     expect=201)["token"]
        spec = {"command": ["python3", "-c", "print(1)"], "gpus": 1, "name": "one",
                "project": "vision", "priority": 7, "env": {"A": "b c"}, "est_runtime": 60}
        one = c.submit(token=user, **spec)
        assert one["owner"] == "dana" and one["state"] == "pending", one
        assert as_stored(c.job(one["id"])) == one, (c.job(one["id"]), one)
        arr = c.submit(token=user, **dict(spec, name="arr", array=3))["jobs"]
        assert [j["name"] for j in arr] == ["arr[0]", "arr[1]", "arr[2]"], arr
        assert [j["spec"]["env"]["TIDE_ARRAY_INDEX"] for j in arr] == ["0", "1", "2"], arr
        for j in arr:
            assert as_stored(c.job(j["id"])) == j, (c.job(j["id"]), j)
        # A replayed key answers from the database: the same jobs.
        key = {"Idempotency-Key": "answer-1"}
        body = json.dumps(dict(spec, name="keyed")).encode()
        first = c.request("POST", "/v1/jobs", raw=body, token=user, headers=key)
        again = c.request("POST", "/v1/jobs", raw=body, token=user, headers=key)
        assert first[0] == 201 and again[0] == 201 and first[1] == again[1], (first, again)


def test_a_kept_alive_connection_is_each_time_the_token_it_sends():
    """A connection hashes its token once and keeps the hash (auth_memo.c):
    on one kept-alive connection, every request must still be whoever its
    own Authorization header names, a revoked token fails at once, and a
    token one character off is refused."""
    import http.client
    with Cluster(agents=0) as c:
        dana = c.api("POST", "/v1/tokens", {"name": "dana", "projects": ["vision"]},
                     expect=201)["token"]
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=30)

        def post(token, project):
            conn.request("POST", "/v1/jobs", json.dumps({"command": ["true"], "project": project}),
                         {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, json.loads(r.read())
        status, out = post(c.admin, "default")
        sock = conn.sock
        assert status == 201 and out["owner"] == "admin", (status, out)
        status, out = post(dana, "default")
        assert status == 403 and out["error"]["field"] == "project", (status, out)
        status, out = post(dana, "vision")
        assert status == 201 and out["owner"] == "dana", (status, out)
        status, out = post(c.admin, "vision")
        assert status == 201 and out["owner"] == "admin", (status, out)
        off = c.admin[:-1] + ("0" if c.admin[-1] != "0" else "1")
        status, out = post(off, "default")
        assert status == 401, (status, out)
        status, out = post(dana, "vision")
        assert status == 201 and out["owner"] == "dana", (status, out)
        c.api("DELETE", "/v1/tokens/dana")
        status, out = post(dana, "vision")
        assert status == 401, (status, out)
        assert conn.sock is sock, "the connection was not kept alive: nothing was tested"
        conn.close()


def test_concurrent_submits_each_get_their_own_durable_answer():
    """Submits from many clients at once are committed together by whichever
    of them finds nobody committing (submit_batch.c): each still gets its own
    201 (or its own error naming the field), and every 201 survives kill -9."""
    import threading
    with Cluster(agents=0) as c:
        answers, lock = [], threading.Lock()

        def client(n):
            for i in range(12):
                if i % 6 == 5:  # refused inside the batch, alone
                    body = {"command": ["true"], "name": f"c{n}-bad{i}", "depends_on": [999999]}
                elif i % 6 == 4:
                    body = {"command": ["true"], "name": f"c{n}-arr{i}", "array": 2}
                else:
                    body = {"command": ["true"], "name": f"c{n}-j{i}"}
                status, out = c.request("POST", "/v1/jobs", body)
                with lock:
                    answers.append((body["name"], status, out))
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        made = {}
        for name, status, out in answers:
            if "-bad" in name:
                assert status == 400 and out["error"]["field"] == "depends_on", (name, out)
            elif "-arr" in name:
                assert status == 201, (name, out)
                assert [j["name"] for j in out["jobs"]] == [f"{name}[0]", f"{name}[1]"], out
                made.update({j["id"]: j["name"] for j in out["jobs"]})
            else:
                assert status == 201 and out["name"] == name, (name, out)
                made[out["id"]] = name
        assert len(made) == 8 * (8 + 2 * 2), len(made)  # ids unique, none shared
        c.kill_server()
        c.start_server()
        stored = {j["id"]: j["name"] for j in c.jobs("?limit=1000")}
        assert stored == made, (sorted(set(made) ^ set(stored)))


def test_submit_wait_json_prints_only_the_json_and_exits_with_the_jobs_status():
    with Cluster(agents=1, kill_grace_s=1) as c:
        p = c.cli("submit", "--wait", "--json", "--", "sh", "-c", "echo out; exit 3")
        job = json.loads(p.stdout)  # the whole of stdout is one JSON document
        assert p.returncode == 3, (p.returncode, p.stdout, p.stderr)
        assert job["state"] == "failed" and job["exit_code"] == 3, job
        p = c.cli("submit", "--wait", "--", "true")
        assert p.returncode == 0 and "submitted job" in p.stdout and "succeeded" in p.stdout, p
        p = c.cli("submit", "--wait", "--", "sh", "-c", "kill -9 $$")
        assert p.returncode == 128 + 9, (p.returncode, p.stdout, p.stderr)
        p = c.cli("submit", "--wait", "--max-runtime", "1", "--", "sleep", "30")
        assert p.returncode == 124, (p.returncode, p.stdout, p.stderr)
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        waiter = subprocess.Popen([TIDE, "submit", "--wait", "--json", "--", "sleep", "60"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=c.dir)
        running = wait_until(lambda: [j for j in c.jobs("?state=running")], 20)
        c.api("DELETE", f"/v1/jobs/{running[0]['id']}")
        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 125, (waiter.returncode, out, err)
        assert json.loads(out)["state"] == "cancelled", out
        p = c.cli("submit", "--wait", "--json", "--array", "2", "--", "sh", "-c",
                  'exit "$TIDE_ARRAY_INDEX"')
        both = json.loads(p.stdout)
        assert [j["exit_code"] for j in both["jobs"]] == [0, 1], both
        assert p.returncode == 1, (p.returncode, p.stdout)


def test_nodes_flag_runs_a_gang_over_several_nodes():
    with Cluster(agents=2, fake_gpus="2xH200:141GB") as c:
        p = c.cli("submit", "--gpus", "4", "--nodes", "2", "--wait", "--json", "--", "sh", "-c",
                  'echo "rank $TIDE_GANG_RANK of $TIDE_GANG_SIZE"')
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        job = json.loads(p.stdout)
        assert job["spec"]["nodes"] == 2 and job["state"] == "succeeded", job
        assert "rank 0 of 2" in c.logs(job["id"]), c.logs(job["id"])
        p = c.cli("submit", "--nodes", "x", "--", "true")
        assert p.returncode == 2 and "--nodes" in p.stderr, p.stderr
        # --cpus is whole cores, as the spec's cpus is: said before anything is sent.
        p = c.cli("submit", "--cpus", "1.5", "--", "true")
        assert p.returncode == 2 and "--cpus" in p.stderr and "whole" in p.stderr, p.stderr
        assert "fractions" not in c.cli("submit", "--help").stdout


def test_cancel_takes_ranges_lists_and_project_and_state_filters():
    with Cluster(agents=1, fake_gpus="1xT4:16GB") as c:
        blocker = c.submit(command=["sleep", "60"], gpus=1)
        c.wait_state(blocker["id"], "running")
        ids = [c.submit(command=["true"], gpus=1)["id"] for _ in range(5)]
        vision = [c.submit(command=["true"], gpus=1, project="vision")["id"] for _ in range(3)]
        p = c.cli("cancel", f"{ids[0]}-{ids[2]}")
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert "cancelled 3 of 3 jobs" in p.stdout, p.stdout
        assert [c.job(i)["state"] for i in ids] == ["cancelled"] * 3 + ["pending"] * 2
        p = c.cli("cancel", f"{ids[3]},{vision[0]}")
        assert p.returncode == 0 and "cancelled 2 of 2 jobs" in p.stdout, p.stdout
        assert c.job(ids[3])["state"] == "cancelled" and c.job(vision[0])["state"] == "cancelled"
        p = c.cli("cancel", "--project", "vision", "--state", "pending")
        assert p.returncode == 0 and "cancelled 2 of 2 jobs" in p.stdout, p.stdout
        assert [c.job(i)["state"] for i in vision] == ["cancelled"] * 3
        assert c.job(ids[4])["state"] == "pending" and c.job(blocker["id"])["state"] == "running"
        # Bad input is refused before anything is cancelled.
        for args, part in ((["47-45"], "45-47"), (["4-"], "'4-'"), (["1,,2"], "empty"),
                           (["--state", "succeeded"], "finished"), (["--state", "bogus"], "bogus"),
                           ([], "which jobs")):
            p = c.cli("cancel", *args)
            assert p.returncode == 2 and part in p.stderr, (args, p.returncode, p.stderr)
        # A range reaching past what exists cancels what it can and says so.
        p = c.cli("cancel", f"{ids[4]}-{ids[4] + 1000}")
        assert p.returncode == 1 and "cancelled 1 of 1001 jobs" in p.stdout, (p.stdout, p.stderr)
        assert c.job(ids[4])["state"] == "cancelled"
        p = c.cli("cancel", "--state", "running")
        assert p.returncode == 0 and f"stopping job {blocker['id']}" in p.stdout, p.stdout
        assert c.wait_final([blocker["id"]])[blocker["id"]]["state"] == "cancelled"
        p = c.cli("cancel", "--project", "vision")
        assert p.returncode == 0 and "no unfinished job matches" in p.stdout, p.stdout
        # More jobs than one listing page (1,000): the CLI pages through them
        # all. A new blocker holds the GPU so none of them runs meanwhile.
        blocker = c.submit(command=["sleep", "60"], gpus=1)
        c.wait_state(blocker["id"], "running")
        status, out = c.request("POST", "/v1/jobs:batch", {"jobs": [
            {"command": ["true"], "gpus": 1, "project": "bulk"} for _ in range(1003)]})
        assert status == 200 and len(out["jobs"]) == 1003, (status, str(out)[:300])
        p = c.cli("cancel", "--project", "bulk")
        assert p.returncode == 0 and "cancelled 1003 of 1003 jobs" in p.stdout, p.stdout[-300:]


if __name__ == "__main__":
    run_tests([
        test_readme_first_examples_run_verbatim_in_the_submit_directory,
        test_job_whose_directory_is_missing_on_the_node_fails_saying_so,
        test_jobs_that_could_never_run_are_refused_at_submit_naming_the_field,
        test_nothing_is_refused_before_any_node_registers_and_a_pool_may_grow_to_fit,
        test_the_submit_answer_is_the_job_as_stored,
        test_a_kept_alive_connection_is_each_time_the_token_it_sends,
        test_concurrent_submits_each_get_their_own_durable_answer,
        test_submit_wait_json_prints_only_the_json_and_exits_with_the_jobs_status,
        test_nodes_flag_runs_a_gang_over_several_nodes,
        test_cancel_takes_ranges_lists_and_project_and_state_filters,
    ])
