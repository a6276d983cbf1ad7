"""End to end: join tokens bound to one node (tide token create --join
--node NAME) register that node and no other, once; the shared join token
can be turned off so that only bound ones work."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests  # noqa: E402


def bound_token(c, node, *extra):
    p = c.cli("token", "create", "--join", "--node", node, *extra, check=True)
    token = p.stdout.strip()
    assert len(token) == 64, p.stdout
    return token


def register(c, token, name):
    return c.request("POST", "/v1/agent/register", {"name": name, "gpus": []}, token=token)


def write_token(c, name, token):
    path = os.path.join(c.dir, name)
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return path


def test_a_bound_join_token_registers_its_node_once_and_no_other():
    with Cluster(agents=0) as c:
        token = bound_token(c, "gpu-a")
        # another name is refused, and that does not use the token up
        status, out = register(c, token, "gpu-b")
        assert status == 403 and out["error"]["field"] == "name", (status, out)
        assert "only node 'gpu-a', not 'gpu-b'" in out["error"]["message"], out
        assert c.node("gpu-b") is None
        # a real agent registers gpu-a with it, and runs a job there
        c.start_agent("gpu-a", token_file=write_token(c, "gpu-a.token", token))
        job = c.submit(command=["true"], gpus=1)
        assert c.wait_final([job["id"]])[job["id"]]["state"] == "succeeded"
        # used up: the same name again is refused 401, saying why
        status, out = register(c, token, "gpu-a")
        assert status == 401, (status, out)
        assert "already registered node 'gpu-a'" in out["error"]["message"], out
        status, out = register(c, token, "gpu-c")
        assert status == 401, (status, out)
        # the agent keeps working with its node token
        assert c.node("gpu-a")["state"] == "ready"
        listed = {t["name"]: t for t in c.api("GET", "/v1/tokens")["tokens"]}
        assert listed["gpu-a"]["kind"] == "join" and listed["gpu-a"]["used"] is True, listed
        # the shared token still registers while it is on (the default)
        status, out = register(c, c.join, "gpu-d")
        assert status == 200 and out["node_token"], (status, out)


def test_a_used_bound_join_token_answers_again_only_the_run_that_used_it():
    # Its registration's answer lost, the agent sends it again with the
    # token it used: the same run gets a new node token, across a server
    # restart too; nobody else gets in with the token.
    with Cluster(agents=0) as c:
        token = bound_token(c, "gpu-r")
        body = {"name": "gpu-r", "cpus": 1, "memory_mib": 1, "run": "run-1",
                "gpus": [{"index": 0, "name": "H200", "memory_total_mib": 1000}]}
        status, first = c.request("POST", "/v1/agent/register", body, token=token)
        assert status == 200, first
        status, again = c.request("POST", "/v1/agent/register", body, token=token)
        assert status == 200 and again["node_id"] == first["node_id"], again
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": []},
                                token=first["node_token"])
        assert status == 401, "the lost answer's token is replaced"
        for other in (dict(body, run="run-2"), {k: v for k, v in body.items() if k != "run"}):
            status, out = c.request("POST", "/v1/agent/register", other, token=token)
            assert status == 401, (status, out)
            assert "already registered node 'gpu-r'" in out["error"]["message"], out
        # the token stays an agent's: the user API refuses it as before
        status, out = c.request("GET", "/v1/jobs", token=token)
        assert status == 401 and "already registered" in out["error"]["message"], out
        c.kill_server()
        c.start_server()
        status, after = c.request("POST", "/v1/agent/register", body, token=token)
        assert status == 200 and after["node_id"] == first["node_id"], after
        status, out = c.request("POST", "/v1/agent/heartbeat", {"tasks": [], "run": "run-1",
                                                                "seq": 1}, token=after["node_token"])
        assert status == 200, out
        listed = {t["name"]: t for t in c.api("GET", "/v1/tokens")["tokens"]}
        assert listed["gpu-r"]["used"] is True, listed


def test_bound_join_tokens_expire_and_can_be_revoked_unused():
    with Cluster(agents=0) as c:
        short = bound_token(c, "gpu-e", "--expires", "1s")
        time.sleep(1.5)
        status, out = register(c, short, "gpu-e")
        assert status == 401 and "expired" in out["error"]["message"], (status, out)
        unused = bound_token(c, "gpu-f")
        listed = {t["name"]: t for t in c.api("GET", "/v1/tokens")["tokens"]}
        assert listed["gpu-f"]["used"] is False, listed
        c.cli("token", "revoke", "gpu-f", check=True)
        status, out = register(c, unused, "gpu-f")
        assert status == 401 and out["error"]["message"] == "invalid token", (status, out)
        # bad requests name the field
        p = c.cli("token", "create", "--join", "--node", "no/slash")
        assert p.returncode != 0 and "node" in p.stderr, p.stderr
        status, out = c.request("POST", "/v1/tokens", {"kind": "join", "node": "x",
                                                       "projects": ["a"]})
        assert status == 400 and out["error"]["field"] == "projects", (status, out)
        status, out = c.request("POST", "/v1/tokens", {"name": "bob", "projects": ["a"],
                                                       "node": "x"})
        assert status == 400 and out["error"]["field"] == "node", (status, out)


def test_the_shared_join_token_is_refused_when_turned_off():
    for how in ({"server_args": ["--no-shared-join-token"]},
                {"config": "server:\n  shared_join_token: false\n"}):
        with Cluster(agents=0, **how) as c:
            status, out = register(c, c.join, "gpu-a")
            assert status == 401, (how, status, out)
            assert "shared join token is turned off" in out["error"]["message"], out
            assert c.node("gpu-a") is None
            c.start_agent("gpu-a", token_file=write_token(c, "a.token", bound_token(c, "gpu-a")))
            assert c.node("gpu-a")["state"] == "ready"
    # pools start their nodes with the shared token: both at once are refused
    with Cluster(agents=0) as c:
        c.close(remove=False)
        cfg = os.path.join(c.dir, "pools.yaml")
        with open(cfg, "w") as f:
            f.write("server:\n  shared_join_token: false\npools:\n  - name: p\n"
                    "    gpu: H200\n    gpus_per_node: 1\n    max_nodes: 1\n"
                    "    provider: local\n")
        p = c.cli("server", "--config", cfg, "--check-config")
        assert p.returncode == 2 and "shared_join_token" in p.stderr, (p.returncode, p.stderr)


if __name__ == "__main__":
    run_tests([
        test_a_bound_join_token_registers_its_node_once_and_no_other,
        test_a_used_bound_join_token_answers_again_only_the_run_that_used_it,
        test_bound_join_tokens_expire_and_can_be_revoked_unused,
        test_the_shared_join_token_is_refused_when_turned_off,
    ])
