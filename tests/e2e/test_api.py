"""End to end: bad input gets a 4xx naming the field; tokens and project isolation."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from harness import STORE, TIDE, Cluster, free_port, run_tests, wait_until  # noqa: E402


def expect_error(c, status, field, body=None, raw=None, path="/v1/jobs", method="POST", token=None):
    got, out = c.request(method, path, body, token=token, raw=raw)
    assert got == status, (got, out, body if raw is None else raw[:80])
    assert isinstance(out, dict) and "error" in out, out
    assert out["error"]["message"], out
    if field:
        assert out["error"].get("field") == field, out
    return out["error"]


def test_bad_job_specs_get_400_naming_the_field_and_nothing_is_lost():
    with Cluster(agents=0) as c:
        keep = c.submit(command=["true"], gpus=0)
        cases = [
            ({"command": ["true"], "gpus": -1}, "gpus"),
            ({"command": ["true"], "gpus": 10000}, "gpus"),
            ({"command": ["true"], "gpus": "2"}, "gpus"),
            ({"command": ["true"], "gpus": 1.5}, "gpus"),
            ({"command": ["true"], "name": "x" * 10000}, "name"),
            ({"command": ["true"], "bogus": 1}, "bogus"),
            ({"command": "true"}, "command"),
            ({"command": []}, "command"),
            ({"command": ["true", 3]}, "command"),
            ({}, "command"),
            ({"command": ["true"], "priority": 10 ** 12}, "priority"),
            ({"command": ["true"], "max_runtime": -5}, "max_runtime"),
            ({"command": ["true"], "retries": 1000}, "retries"),
            ({"command": ["true"], "env": {"1BAD": "x"}}, "env"),
            ({"command": ["true"], "env": {"A": 1}}, "env"),
            ({"command": ["true"], "project": "a b"}, "project"),
            ({"command": ["true"], "workdir": "relative/path"}, "workdir"),
            ({"command": ["true"], "preemptible": "yes"}, "preemptible"),
            ({"command": ["true"], "checkpoint_signal": "SIGNOPE"}, "checkpoint_signal"),
            ({"command": ["true"], "array": 0}, "array"),
        ]
        for body, field in cases:
            err = expect_error(c, 400, field, body)
            assert field in err["message"], err
        expect_error(c, 400, None, raw=b'{"command": ["true"')
        expect_error(c, 400, None, raw=b'[1, 2]')
        expect_error(c, 400, None, raw=b'{"command": ["\xff\xfe"]}')
        expect_error(c, 400, None, raw=b'{"command": ["a"], "command": ["b"]}')
        expect_error(c, 413, None, raw=b'{"name": "' + b"x" * (50 * 1024 * 1024) + b'"}')
        expect_error(c, 404, "id", path="/v1/jobs/99999x", method="GET")
        expect_error(c, 404, None, path="/v1/jobs/424242", method="GET")
        expect_error(c, 404, None, path="/v1/jobs/424242", method="DELETE")
        expect_error(c, 404, None, path="/v1/nope", method="GET")
        expect_error(c, 400, "state", path="/v1/jobs?state=bogus", method="GET")
        expect_error(c, 400, "limit", path="/v1/jobs?limit=-3", method="GET")
        # Still up, and the job accepted before is intact.
        assert c.job(keep["id"])["spec"]["command"] == ["true"]
        assert len(c.jobs()) == 1


def test_cli_rejects_bad_flags_and_bad_yaml_with_nonzero_exit():
    with Cluster(agents=0) as c:
        p = c.cli("submit", "--gpus", "abc", "--", "true")
        assert p.returncode == 2 and "--gpus" in p.stderr, (p.returncode, p.stderr)
        p = c.cli("submit", "--gpus", "-1", "--", "true")
        assert p.returncode != 0 and "gpus" in p.stderr, (p.returncode, p.stderr)
        bad = os.path.join(c.dir, "bad.yaml")
        with open(bad, "w") as f:
            f.write("command: [sh, -c\nname: x\n  gpus: 1\n")
        p = c.cli("submit", bad)
        assert p.returncode != 0 and "line" in p.stderr, (p.returncode, p.stderr)
        unknown = os.path.join(c.dir, "unknown.yaml")
        with open(unknown, "w") as f:
            f.write("command: [echo, hi]\ngpu_count: 2\n")
        p = c.cli("submit", unknown)
        assert p.returncode != 0 and "gpu_count" in p.stderr, (p.returncode, p.stderr)
        p = c.cli("show", "777")
        assert p.returncode != 0 and "not found" in p.stderr, (p.returncode, p.stderr)
        assert c.jobs() == []


def test_cli_submit_jobs_show_and_yaml_file_work():
    with Cluster(agents=1) as c:
        p = c.cli("submit", "--name", "hello", "--gpus", "1", "--env", "X=1", "--", "sh", "-c", "echo $X", check=True)
        assert "submitted job" in p.stdout, p.stdout
        job_id = int(p.stdout.split()[-1])
        spec = os.path.join(c.dir, "job.yaml")
        with open(spec, "w") as f:
            f.write("name: from-yaml\ngpus: 2\ncommand: [sh, -c, 'echo yaml $0 $X', 10]\n"
                    "env: {X: true}\nretries: 1\n")
        p = c.cli("submit", spec, "--json", check=True)
        yaml_job = json.loads(p.stdout)
        assert yaml_job["spec"]["gpus"] == 2 and yaml_job["spec"]["retries"] == 1, yaml_job
        c.wait_final([job_id, yaml_job["id"]])
        table = c.cli("jobs", check=True).stdout
        assert "hello" in table and "from-yaml" in table and "succeeded" in table, table
        show = c.cli("show", str(job_id), check=True).stdout
        assert "succeeded" in show, show
        assert c.cli("logs", str(yaml_job["id"]), check=True).stdout == "yaml 10 true\n"
        nodes = c.cli("nodes", check=True).stdout
        assert "node-1" in nodes and "ready" in nodes, nodes
        for cmd in ("up", "server", "agent", "submit", "jobs", "show", "cancel", "logs", "nodes", "token",
                    "queues"):
            h = c.cli(cmd, "--help")
            assert h.returncode == 0 and "usage" in h.stdout.lower(), (cmd, h.stdout, h.stderr)


def test_requests_without_a_valid_token_get_401_and_nothing_else():
    with Cluster(agents=0) as c:
        for token in ("", "wrong", "x" * 300):
            for method, path in (("GET", "/v1/jobs"), ("POST", "/v1/jobs"), ("GET", "/v1/nodes"),
                                 ("GET", "/metrics"), ("GET", "/v1/events")):
                req = urllib.request.Request(c.url + path, method=method,
                                             data=b"{}" if method == "POST" else None)
                if token:
                    req.add_header("Authorization", f"Bearer {token}")
                try:
                    urllib.request.urlopen(req, timeout=5)
                    raise AssertionError(f"{method} {path} with {token[:8]!r} succeeded")
                except urllib.error.HTTPError as e:
                    body = json.loads(e.read())
                    assert e.code == 401, (e.code, body)
                    assert set(body) == {"error"} and body["error"]["code"] == "unauthorized", body
        # The join token registers agents and does nothing else.
        expect_error(c, 403, None, {"command": ["true"]}, token=c.join)
        expect_error(c, 403, None, path="/v1/jobs", method="GET", token=c.join)
        assert c.jobs() == []


def test_token_files_and_the_database_are_private():
    with Cluster(agents=0) as c:
        c.submit(command=["true"], gpus=0)  # something written: the WAL files exist
        names = ["admin.token", "join.token"]
        if STORE == "sqlite":  # PostgreSQL keeps the database elsewhere
            names += ["tide.db", "tide.db-wal"]
            # the server holds tide.db alone: its WAL index is in memory, no -shm file
            assert not os.path.exists(os.path.join(c.data, "tide.db-shm"))
        for name in names:
            mode = os.stat(os.path.join(c.data, name)).st_mode & 0o777
            assert mode == 0o600, (name, oct(mode))
        # a token file copied or restored with looser modes (DATA is 0711: any
        # job could read it by name) is set back and said at start
        c.kill_server(signal.SIGTERM)
        os.chmod(os.path.join(c.data, "admin.token"), 0o644)
        c.start_server()
        assert os.stat(os.path.join(c.data, "admin.token")).st_mode & 0o777 == 0o600
        assert "admin.token was readable by others (mode 644)" in c.log("server"), c.log("server")


def test_an_agents_node_file_readable_by_others_is_made_private_again():
    with Cluster(agents=1) as c:
        node_file = os.path.join(c.dir, "agents", "node-1", "node.json")
        c.kill_agent("node-1", signal.SIGTERM)
        os.chmod(node_file, 0o644)
        c.start_agent("node-1")
        assert os.stat(node_file).st_mode & 0o777 == 0o600
        assert "node.json was readable by others (mode 644)" in c.log("agent-node-1")


def test_agent_numbers_out_of_range_are_refused_naming_the_field():
    with Cluster(agents=0) as c:
        def register(**fields):
            body = {"name": "rogue", "cpus": 8, "memory_mib": 1024,
                    "gpus": [{"index": 0, "name": "H200", "memory_total_mib": 1000}]}
            body.update(fields)
            return c.request("POST", "/v1/agent/register", body, token=c.join)

        for fields, field in [
                ({"gpus": [{"index": 0, "memory_total_mib": 2 ** 62}]}, "memory_total_mib"),
                ({"cpus": -1}, "cpus"), ({"memory_mib": 2 ** 60}, "memory_mib"),
                ({"gpus": [{"index": 0}, {"index": 0}]}, "index"),
                ({"gpus": [{"index": 99999}]}, "index"), ({"cpus": "8"}, "cpus")]:
            status, out = register(**fields)
            assert status == 400, (fields, status, out)
            assert out["error"]["field"] == field and field in out["error"]["message"], (fields, out)
        assert c.api("GET", "/v1/nodes")["nodes"] == [], "nothing refused was registered"

        status, out = register()
        assert status == 200, out
        node_token = out["node_token"]
        beat = {"tasks": [], "gpus": [{"index": 0, "utilization_pct": 1000}]}
        status, out = c.request("POST", "/v1/agent/heartbeat", beat, token=node_token)
        assert status == 400 and out["error"]["field"] == "utilization_pct", out
        # What was refused was not stored: a restart reads the node back whole.
        c.kill_server()
        c.start_server()
        node = c.node("rogue")
        assert node["gpus"][0]["memory_total_mib"] == 1000, node


def test_a_retried_submit_with_an_idempotency_key_makes_its_jobs_once():
    import threading
    with Cluster(agents=0) as c:
        spec = {"command": ["sleep", "1"], "gpus": 1, "name": "once"}

        def post(key, body=spec, token=None):
            return c.request("POST", "/v1/jobs", body, token=token,
                             headers={"Idempotency-Key": key})
        status, first = post("retry-1")
        assert status == 201, first
        status, again = post("retry-1")
        assert status == 201 and again["id"] == first["id"], (first, again)

        status, out = post("retry-1", {**spec, "gpus": 2})
        assert status == 409 and out["error"]["field"] == "Idempotency-Key", out
        status, out = post("x" * 129)
        assert status == 400 and out["error"]["field"] == "Idempotency-Key", out

        # Many at once with one key: one job, every answer names it.
        answers = []
        def storm():
            answers.append(post("storm", {**spec, "name": "storm"}))
        threads = [threading.Thread(target=storm) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(st == 201 for st, _ in answers), answers
        assert len({out["id"] for _, out in answers}) == 1, answers

        status, arr = post("array-1", {**spec, "name": "arr", "array": 3})
        assert status == 201 and len(arr["jobs"]) == 3, arr

        # Keys are per token, and remembered across a restart.
        alice = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["default"]},
                      expect=201)["token"]
        status, hers = post("retry-1", token=alice)
        assert status == 201 and hers["id"] != first["id"], hers
        c.kill_server()
        c.start_server()
        status, replay = post("array-1", {**spec, "name": "arr", "array": 3})
        assert [j["id"] for j in replay["jobs"]] == [j["id"] for j in arr["jobs"]], replay
        names = [j["name"] for j in c.jobs()]
        assert names.count("once") == 2 and names.count("storm") == 1, names
        assert len([n for n in names if n.startswith("arr")]) == 3, names


def test_tokens_expire_can_be_listed_and_revoked():
    with Cluster(agents=0) as c:
        def token(name, **extra):
            return c.api("POST", "/v1/tokens", {"name": name, "projects": ["default"], **extra},
                         expect=201)
        brief = token("brief", expires_in_s=1)
        assert brief["expires"] is not None, brief
        kept = token("kept")
        assert c.request("GET", "/v1/jobs", token=brief["token"])[0] == 200
        time.sleep(1.5)
        status, out = c.request("GET", "/v1/jobs", token=brief["token"])
        assert status == 401 and "expired" in out["error"]["message"], out

        listed = {t["name"]: t for t in c.api("GET", "/v1/tokens")["tokens"]}
        assert set(listed) == {"brief", "kept"} and listed["kept"]["expires"] is None, listed
        assert all("token" not in t for t in listed.values()), "secrets are never listed"

        assert c.api("DELETE", "/v1/tokens/kept")["tokens"] == 1
        assert c.request("GET", "/v1/jobs", token=kept["token"])[0] == 401
        assert c.request("DELETE", "/v1/tokens/kept")[0] == 404
        assert c.request("GET", "/v1/tokens", token=brief["token"])[0] == 401
        status, out = c.request("POST", "/v1/tokens",
                                {"name": "x", "projects": ["p"], "expires_in_s": 0})
        assert status == 400 and out["error"]["field"] == "expires_in_s", out
        # nobody else acts (owns jobs, holds, shares idempotency keys) as admin
        for kind in ("user", "metrics"):
            status, out = c.request("POST", "/v1/tokens",
                                    {"name": "admin", "projects": ["other"], "kind": kind})
            assert status == 400 and out["error"]["field"] == "name", out

        # The same through the CLI.
        made = c.cli("token", "create", "--name", "carol", "--project", "default",
                     "--expires", "12h", check=True)
        carol = made.stdout.strip()
        listed = c.cli("token", "list", check=True).stdout
        assert "carol" in listed and "user" in listed and carol not in listed, listed
        assert c.request("GET", "/v1/jobs", token=carol)[0] == 200
        assert "revoked 1 token(s) named 'carol'" in c.cli("token", "revoke", "carol",
                                                           check=True).stdout
        assert c.request("GET", "/v1/jobs", token=carol)[0] == 401
        bad = c.cli("token", "create", "--name", "d", "--project", "p", "--expires", "3 weeks")
        assert bad.returncode == 2 and "--expires" in bad.stderr, bad.stderr
        gone = c.cli("token", "revoke", "nobody")
        assert gone.returncode != 0 and "no user token named 'nobody'" in gone.stderr, gone.stderr


def test_guessing_tokens_is_cut_off_after_repeated_failures():
    with Cluster(agents=0) as c:
        unseen = c.api("POST", "/v1/tokens", {"name": "u", "projects": ["p"]}, expect=201)["token"]
        c.kill_server()  # a server just started has seen no token pass
        c.start_server()
        codes = [c.request("GET", "/v1/jobs", token="guess-%d" % i)[0] for i in range(40)]
        assert codes[:30] == [401] * 30 and set(codes[30:]) == {429}, codes
        # even a good token, when this server has not seen it pass yet
        status, out = c.request("GET", "/v1/jobs", token=unseen)
        assert status == 429 and "retry in" in out["error"]["message"], out
        assert c.request("GET", "/healthz", token="")[0] == 200
        # but not the server's own admin and join tokens (its DATA files):
        # the admin on the host is not locked out by a local user's guesses
        assert c.request("GET", "/v1/jobs")[0] == 200
        assert c.register_by_hand("hand")["node_token"]


def test_tokens_seen_passing_are_still_served_from_an_address_that_guessed():
    """The tokens of an agent and of the admin on the host (or behind the
    NAT) that guesses are not refused with it: the admin's token and a
    node's heartbeats are answered, the agent keeps its node and its running
    job past the node timeout; a guess, and a good token the server has
    never seen pass, still get 429."""
    with Cluster(agents=1) as c:
        job = c.submit(gpus=1, command=["sleep", "60"])
        c.wait_state(job["id"], "running")
        hand = c.register_by_hand("hand", run="r-1")
        beat = {"tasks": [], "run": "r-1", "seq": 1}
        assert c.request("POST", "/v1/agent/heartbeat", beat, token=hand["node_token"])[0] == 200
        unseen = c.api("POST", "/v1/tokens", {"name": "u", "projects": ["p"]}, expect=201)["token"]
        codes = [c.request("GET", "/v1/jobs", token="guess-%d" % i)[0] for i in range(31)]
        assert codes[-1] == 429, codes
        status, out = c.request("GET", "/v1/jobs")
        assert status == 200, (status, out)
        status, out = c.request("POST", "/v1/agent/heartbeat", dict(beat, seq=2),
                                token=hand["node_token"])
        assert status == 200, (status, out)
        assert c.request("GET", "/v1/jobs", token="guess-again")[0] == 429
        assert c.request("GET", "/v1/jobs", token=unseen)[0] == 429
        time.sleep(2 * c.node_timeout_ms / 1000)
        assert c.node("node-1")["state"] == "ready", c.node("node-1")
        assert c.job(job["id"])["state"] == "running", c.job(job["id"])
        c.api("DELETE", f"/v1/jobs/{job['id']}")


def test_a_live_nodes_name_cannot_be_taken_with_the_join_token():
    with Cluster(agents=1) as c:
        body = {"name": "node-1", "cpus": 1, "memory_mib": 1,
                "gpus": [{"index": 0, "name": "H200", "memory_total_mib": 1000}]}
        status, out = c.request("POST", "/v1/agent/register", body, token=c.join)
        assert status == 409 and out["error"]["field"] == "name", out
        assert "alive" in out["error"]["message"], out
        time.sleep(1)
        assert c.node("node-1")["state"] == "ready", "the real agent keeps its node"
        assert len(c.node("node-1")["gpus"]) == 4


def test_a_registration_sent_again_after_its_answer_was_lost_is_answered_again():
    # The same run of an agent (its "run" id) registering a live node again
    # is its own lost answer, not another agent taking the name.
    with Cluster(agents=0) as c:
        body = {"name": "hand", "cpus": 1, "memory_mib": 1, "run": "r-1",
                "gpus": [{"index": 0, "name": "H200", "memory_total_mib": 1000}]}
        status, first = c.request("POST", "/v1/agent/register", body, token=c.join)
        assert status == 200, first
        status, again = c.request("POST", "/v1/agent/register", body, token=c.join)
        assert status == 200 and again["node_id"] == first["node_id"], again
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": []},
                                token=first["node_token"])
        assert status == 401, "the lost answer's token is replaced"
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [], "run": "r-1",
                                                                "seq": 1}, token=again["node_token"])
        assert status == 200, out
        for other in (dict(body, run="r-2"), {k: v for k, v in body.items() if k != "run"}):
            status, out = c.request("POST", "/v1/agent/register", other, token=c.join)
            assert status == 409 and out["error"]["field"] == "name", out
        for bad in (["r-1"], "r" * 33):
            status, out = c.request("POST", "/v1/agent/register", dict(body, run=bad), token=c.join)
            assert status == 400 and out["error"]["field"] == "run", out
        # the run is kept with the node: a server restart does not forget it
        c.kill_server()
        c.start_server()
        status, after = c.request("POST", "/v1/agent/register", body, token=c.join)
        assert status == 200 and after["node_id"] == first["node_id"], after
        status, out = c.request("POST", "/v1/agent/register", dict(body, run="r-2"), token=c.join)
        assert status == 409 and out["error"]["field"] == "name", out


def test_an_agent_whose_name_is_held_by_a_live_node_waits_for_it_to_be_lost():
    # A first registration refused with 409 may be the agent's own whose
    # answer was lost to a server that restarted: it tries again, and gets
    # the name once that node is lost, rather than giving up.
    with Cluster(agents=0, node_timeout_ms=3000) as c:
        c.register_by_hand("node-x")
        c.start_agent("node-x", wait=False)
        wait_until(lambda: "is alive" in c.log("agent-node-x"), 10, what="the agent refused")
        assert c.agents["node-x"].poll() is None, "the agent gave up"
        wait_until(lambda: c.node("node-x")["state"] == "ready" and
                   len(c.node("node-x")["gpus"]) == 4, 20,
                   what="the agent registered once the held node was lost")


def test_a_second_server_on_the_same_data_or_port_is_refused_naming_the_holder():
    with Cluster(agents=0) as c:
        same_data = subprocess.run(
            [TIDE, "server", "--data", c.data, "--listen", f"127.0.0.1:{free_port()}"],
            capture_output=True, text=True, timeout=20)
        assert same_data.returncode != 0, same_data
        assert "in use by another tide server" in same_data.stderr, same_data.stderr
        assert f"pid {c.server.pid}" in same_data.stderr, same_data.stderr

        other_data = os.path.join(c.dir, "other-data")
        same_port = subprocess.run(
            [TIDE, "server", "--data", other_data, "--listen", f"127.0.0.1:{c.port}"],
            capture_output=True, text=True, timeout=20)
        assert same_port.returncode != 0, same_port
        assert f"127.0.0.1:{c.port}: in use by pid {c.server.pid}" in same_port.stderr, \
            same_port.stderr
        # The first server is untouched and still the one answering.
        assert c.api("GET", "/v1/nodes")["nodes"] == []


def test_project_tokens_cannot_see_or_touch_other_projects():
    with Cluster(agents=1) as c:
        a = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["vision"]}, expect=201)["token"]
        b = c.api("POST", "/v1/tokens", {"name": "bob", "projects": ["speech"]}, expect=201)["token"]
        ja = c.submit(token=a, project="vision", command=["sh", "-c", "echo secret-a; sleep 20"], gpus=1)
        jb = c.submit(token=b, project="speech", command=["sh", "-c", "echo b; sleep 20"], gpus=1)
        expect_error(c, 403, "project", {"command": ["true"], "project": "vision"}, token=b)
        expect_error(c, 403, "project", {"command": ["true"]}, token=b)  # default project
        ids_b = [j["id"] for j in c.api("GET", "/v1/jobs", token=b)["jobs"]]
        assert ids_b == [jb["id"]], ids_b
        for method, path in (("GET", f"/v1/jobs/{ja['id']}"), ("DELETE", f"/v1/jobs/{ja['id']}"),
                             ("GET", f"/v1/jobs/{ja['id']}/logs")):
            expect_error(c, 404, None, path=path, method=method, token=b)
        events_b = c.api("GET", "/v1/events", token=b)["events"]
        assert events_b and all(e["job_id"] == jb["id"] for e in events_b), events_b
        expect_error(c, 403, None, {"name": "eve", "projects": ["vision"]}, path="/v1/tokens", token=b)
        c.wait_state(ja["id"], "running")
        c.wait_state(jb["id"], "running")
        # on a node, a GPU of another project's job shows busy, not which job
        held = lambda t: sorted((g["job_id"] or 0) for n in c.api("GET", "/v1/nodes", token=t)[  # noqa: E731
            "nodes"] for g in n["gpus"] if not g["free"])
        assert held(b) == [0, jb["id"]] and held(a) == [0, ja["id"]], (held(a), held(b))
        assert held(None) == sorted([ja["id"], jb["id"]])
        wait_until(lambda: "secret-a" in c.api("GET", f"/v1/jobs/{ja['id']}/logs", token=a), 10)
        assert c.job(ja["id"])["state"] == "running"  # bob's cancel did nothing
        c.api("DELETE", f"/v1/jobs/{ja['id']}", token=a)
        c.api("DELETE", f"/v1/jobs/{jb['id']}", token=b)
        final = c.wait_final([ja["id"], jb["id"]])
        assert all(j["state"] == "cancelled" for j in final.values()), final


def test_metrics_count_jobs_nodes_and_gpus():
    with Cluster(agents=2) as c:
        j = c.submit(command=["sleep", "20"], gpus=3)
        c.wait_state(j["id"], "running")
        text = c.api("GET", "/metrics")
        lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
        assert lines['tide_jobs{state="running",queue="default"}'] == "1", text
        assert lines['tide_nodes{state="ready"}'] == "2", text
        assert lines["tide_gpus"] == "8", text
        assert lines["tide_gpus_allocated"] == "3", text
        c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_server_refuses_a_bad_config_with_line_and_key():
    import subprocess
    import tempfile
    from harness import TIDE
    with tempfile.TemporaryDirectory() as d:
        cases = [
            ("scheduler:\n  placement: loadaware\n  max_gpu_utilization_pct: 150\n",
             "tide.yaml:3: scheduler.max_gpu_utilization_pct: must be from 0 to 100"),
            ("server:\n  bogus: 1\n", "tide.yaml:2: server.bogus: unknown key"),
            ("scheduler:\n  placement: magic\n", "tide.yaml:2: scheduler.placement: unknown placement 'magic'"),
            ("colour: blue\n", "tide.yaml:1: colour: unknown section"),
            ("retention:\n  events_s: -1\n", "tide.yaml:2: retention.events_s: must be from 0"),
            ("retention:\n  jobs_days: 3\n", "tide.yaml:2: retention.jobs_days: unknown key"),
            ("server: [1,\n", "tide.yaml:2:1:"),
            ("server:\n  heartbeat_ms: 1000\n  heartbeat_ms: 2000\n",
             "tide.yaml:3: server.heartbeat_ms: duplicate key (first at line 2)"),
            ("server:\n  heartbeat_ms: 1000\n---\n: : : [\n", "tide.yaml:4:"),
        ]
        for text, want in cases:
            path = os.path.join(d, "tide.yaml")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([TIDE, "server", "--config", path, "--data", os.path.join(d, "data"),
                                "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=10)
            assert p.returncode == 2, (text, p.returncode, p.stderr)
            assert want in p.stderr, (text, p.stderr)
        assert not os.path.exists(os.path.join(d, "data")), "nothing is created for a refused config"


def test_an_unreachable_store_stops_the_server_naming_it_without_its_password():
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            url = f"postgres://tide:hunter2@127.0.0.1:{port}/tide"
            p = subprocess.run([TIDE, "server", "--store", url, "--data", os.path.join(d, "data"),
                                "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                               timeout=30)
        assert p.returncode != 0, p.stderr
        assert f"cannot connect to the database postgres://tide:***@127.0.0.1:{port}/tide" in p.stderr, \
            p.stderr
        assert "hunter2" not in p.stderr, p.stderr
        p = subprocess.run([TIDE, "server", "--store", "", "--data", os.path.join(d, "data")],
                           capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and "--store" in p.stderr, (p.returncode, p.stderr)


def test_a_job_may_not_ask_for_another_projects_user_unless_the_admin_submits_it():
    # A project's user keeps its files from other projects' jobs: a token of
    # nlp asking for vision's user ran as it.
    config = ("projects:\n  - name: vision\n    user: daemon\n  - name: nlp\n    user: nobody\n"
              "  - name: speech\n    user: daemon\n")
    with Cluster(agents=0, config=config) as c:
        bob = c.api("POST", "/v1/tokens", {"name": "bob", "projects": ["nlp"]}, expect=201)["token"]
        spec = {"command": ["id"], "gpus": 0, "project": "nlp", "user": "daemon"}
        err = expect_error(c, 403, "user", spec, token=bob)
        assert "'daemon' runs the jobs of project 'vision'" in err["message"], err
        out = c.api("POST", "/v1/jobs:batch", {"jobs": [spec, dict(spec, user="nobody")]},
                    token=bob)
        assert out["created"] == 1 and out["jobs"][0]["error"]["field"] == "user", out
        assert c.submit(token=bob, **dict(spec, user="nobody"))["spec"]["user"] == "nobody"
        assert c.submit(token=bob, **dict(spec, user="tide-other"))["spec"]["user"] == "tide-other"
        assert c.submit(**spec)["spec"]["user"] == "daemon"  # the admin may
        # a user two projects share is each one's own
        sam = c.api("POST", "/v1/tokens", {"name": "sam", "projects": ["speech"]}, expect=201)["token"]
        assert c.submit(token=sam, **dict(spec, project="speech"))["spec"]["user"] == "daemon"


def test_text_that_is_not_utf8_or_cut_mid_character_is_answered_not_failed():
    # A quoted key cut inside a character, a query byte that is not UTF-8,
    # an agent's reason cut in the middle of one: each came back as
    # "internal: out of memory", and the job's row then failed every listing
    # and /v1/events for everyone.
    with Cluster(agents=0, node_timeout_ms=60000) as c:
        key = "a" + "\u00e9" * 40
        err = expect_error(c, 400, None, {key: 1, "command": ["x"]})
        assert err["code"] == "bad_request" and err["field"].startswith("a\u00e9"), err
        for query in ("state=%FF", "cursor=%FF", "order=%FF"):
            err = expect_error(c, 400, query.split("=")[0], path="/v1/jobs?" + query, method="GET")
            assert err["code"] == "bad_request" and "?" in err["message"], err
        token = c.register_by_hand()["node_token"]
        job = c.submit(command=["true"], gpus=1)["id"]
        wait_until(lambda: c.job(job)["state"] == "starting", 10, what="the job placed")
        reason = "\u00e9" * 100  # 200 bytes: cut inside one by the server's 160
        task = {"job_id": job, "attempt": 1, "state": "exited", "exit_code": 3, "reason": reason}
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [task]}, token=token)
        assert status == 200, out
        done = c.job(job)
        assert done["state"] == "failed" and done["reason"].startswith("\u00e9" * 70), done
        assert [j["id"] for j in c.jobs()] == [job]
        assert c.request("GET", "/v1/events")[0] == 200
        if STORE != "sqlite":
            return  # below, rows written with the SQLite file in hand
        # a row stored by an older server with such bytes is shown, not dropped
        c.kill_server(signal.SIGTERM)
        db = sqlite3.connect(os.path.join(c.data, "tide.db"))
        db.execute("UPDATE jobs SET reason = CAST(X'61C3' AS TEXT) WHERE id = ?", (job,))
        db.execute("UPDATE events SET message = CAST(X'62E282' AS TEXT) WHERE job_id = ?", (job,))
        db.commit()
        db.close()
        c.start_server()
        assert c.job(job)["reason"] == "a?", c.job(job)
        assert [j["reason"] for j in c.jobs()] == ["a?"]
        events = c.api("GET", f"/v1/events?job={job}")["events"]
        assert events and all(e["message"] == "b??" for e in events), events


def test_a_start_failing_on_a_long_non_ascii_path_is_reported_whole():
    with Cluster(agents=1) as c:
        path = "/xy/" + "\u00e9" * 100
        job = c.submit(command=[path], gpus=1)["id"]
        done = c.wait_final([job], timeout=30)[job]
        assert done["state"] == "failed" and done["reason"].startswith("start failed: /xy/"), done
        assert c.request("GET", "/v1/events")[0] == 200
        assert [j["id"] for j in c.jobs()] == [job]


def test_job_listings_come_in_pages_with_a_cursor_and_the_cli_pages_through():
    with Cluster(agents=0) as c:
        a = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["vision"]}, expect=201)["token"]
        # 1,300 pending jobs (no node): two projects interleaved
        specs = [{"command": ["true"], "gpus": 0, "array": 650, "project": "vision"},
                 {"command": ["true"], "gpus": 0, "array": 650, "project": "speech"}]
        out = c.api("POST", "/v1/jobs:batch", {"jobs": specs})
        assert out["created"] == 2, out
        everything = sorted((i for e in out["jobs"] for i in e["ids"]), reverse=True)
        assert len(everything) == 1300
        # pages of 400 through a cursor: disjoint, newest first, then next is null
        seen, cursor, pages = [], None, 0
        while True:
            page = c.api("GET", "/v1/jobs?limit=400" + (f"&cursor={cursor}" if cursor else ""))
            seen += [j["id"] for j in page["jobs"]]
            pages += 1
            # live fields still come with a page: why each one waits, its ETA
            assert all(j["state"] == "pending" and "eta" in j and j.get("pending_reason")
                       for j in page["jobs"]), page["jobs"][:1]
            cursor = page["next"]
            if cursor is None:
                break
            assert isinstance(cursor, str) and len(page["jobs"]) == 400, page["next"]
        assert pages == 4 and seen == everything, (pages, len(seen))
        # the default page is 1000; filters and a project token page the same way
        first = c.api("GET", "/v1/jobs")
        assert len(first["jobs"]) == 1000 and first["next"] == str(everything[999]), first["next"]
        mine = []
        cursor = ""
        while cursor is not None:
            page = c.api("GET", "/v1/jobs?limit=250" + (f"&cursor={cursor}" if cursor else ""),
                         token=a)
            mine += [j["id"] for j in page["jobs"]]
            cursor = page["next"]
        vision = sorted(out["jobs"][0]["ids"], reverse=True)
        assert mine == vision, (len(mine), len(vision))
        ids = lambda p: [int(x) for x in p.stdout.split()]  # noqa: E731
        # oldest first: the same jobs the other way round, a cursor going up
        oldest, cursor = [], ""
        while cursor is not None:
            page = c.api("GET", "/v1/jobs?order=oldest&limit=500"
                         + (f"&cursor={cursor}" if cursor else ""))
            oldest += [j["id"] for j in page["jobs"]]
            cursor = page["next"]
        assert oldest == everything[::-1], (oldest[:3], len(oldest))
        assert ids(c.cli("jobs", "-q", "--oldest", "--limit", "1200", check=True)) == \
            everything[::-1][:1200]
        expect_error(c, 400, "order", path="/v1/jobs?order=up", method="GET")
        # a misspelt filter listed every job; numbers are digits, not overflowed
        expect_error(c, 400, "stat", path="/v1/jobs?stat=running", method="GET")
        expect_error(c, 400, "frm", path="/v1/usage?frm=2026-01-01", method="GET")
        for day in ("2025-+1-01", "2025-1-5", "%202025-01-01", "2025-01-01x"):
            expect_error(c, 400, "from", path="/v1/usage?from=" + day, method="GET")
        c.api("GET", "/v1/usage?from=2025-01-05&to=2025-01-05")
        expect_error(c, 400, "to", path="/v1/events?to=0", method="GET")  # was no bound
        expect_error(c, 400, "cursor", path="/v1/jobs?cursor=99999999999999999999", method="GET")
        for limit in ("+5", "%205", "0x10"):
            expect_error(c, 400, "limit", path="/v1/jobs?limit=" + limit, method="GET")
        expect_error(c, 400, "follow", path=f"/v1/jobs/{everything[0]}/logs?follow=no",
                     method="GET")
        expect_error(c, 400, "limit", path="/v1/jobs?limit=100001", method="GET")
        expect_error(c, 400, "limit", path="/v1/jobs?limit=0", method="GET")
        expect_error(c, 400, "cursor", path="/v1/jobs?cursor=abc", method="GET")
        expect_error(c, 400, "cursor", path="/v1/jobs?cursor=-5", method="GET")
        # the CLI: 1000 by default, --limit past one page, --all to the end
        assert ids(c.cli("jobs", "-q", check=True)) == everything[:1000]
        assert ids(c.cli("jobs", "-q", "--limit", "1111", check=True)) == everything[:1111]
        assert ids(c.cli("jobs", "-q", "--all", check=True)) == everything
        assert ids(c.cli("jobs", "-q", "--all", token=a, check=True)) == vision
        listed = json.loads(c.cli("jobs", "--json", "--limit", "1001", check=True).stdout)
        assert [j["id"] for j in listed["jobs"]] == everything[:1001], len(listed["jobs"])
        assert listed["next"] == str(everything[1000]), listed["next"]
        p = c.cli("jobs", "--all", "--limit", "5")
        assert p.returncode == 2 and "--all" in p.stderr, p.stderr


if __name__ == "__main__":
    run_tests([
        test_bad_job_specs_get_400_naming_the_field_and_nothing_is_lost,
        test_cli_rejects_bad_flags_and_bad_yaml_with_nonzero_exit,
        test_cli_submit_jobs_show_and_yaml_file_work,
        test_requests_without_a_valid_token_get_401_and_nothing_else,
        test_token_files_and_the_database_are_private,
        test_a_second_server_on_the_same_data_or_port_is_refused_naming_the_holder,
        test_agent_numbers_out_of_range_are_refused_naming_the_field,
        test_an_agents_node_file_readable_by_others_is_made_private_again,
        test_a_retried_submit_with_an_idempotency_key_makes_its_jobs_once,
        test_tokens_expire_can_be_listed_and_revoked,
        test_guessing_tokens_is_cut_off_after_repeated_failures,
        test_tokens_seen_passing_are_still_served_from_an_address_that_guessed,
        test_a_live_nodes_name_cannot_be_taken_with_the_join_token,
        test_a_registration_sent_again_after_its_answer_was_lost_is_answered_again,
        test_an_agent_whose_name_is_held_by_a_live_node_waits_for_it_to_be_lost,
        test_project_tokens_cannot_see_or_touch_other_projects,
        test_a_job_may_not_ask_for_another_projects_user_unless_the_admin_submits_it,
        test_text_that_is_not_utf8_or_cut_mid_character_is_answered_not_failed,
        test_a_start_failing_on_a_long_non_ascii_path_is_reported_whole,
        test_job_listings_come_in_pages_with_a_cursor_and_the_cli_pages_through,
        test_metrics_count_jobs_nodes_and_gpus,
        test_server_refuses_a_bad_config_with_line_and_key,
        test_an_unreachable_store_stops_the_server_naming_it_without_its_password,
    ])
