"""End to end: the admin token and the shared join token can be rotated
(tide token rotate admin|join, POST /v1/tokens:rotate) when one has leaked:
the earlier one stops working at once and never comes back, not even from
a data directory whose file still holds it, and what runs keeps running."""
import http.client
import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402


def file_token(c, name):
    path = os.path.join(c.data, name)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
    with open(path) as f:
        return f.read().strip()


def refused_as_rotated(c, token, kind):
    status, out = c.request("GET", "/v1/jobs", token=token)
    assert status == 401, (status, out)
    assert f"this {kind} token was rotated out" in out["error"]["message"], out


def test_rotating_the_admin_token_stops_the_old_one_for_good():
    with Cluster(agents=1) as c:
        old = c.admin
        user = c.cli("token", "create", "--name", "alice", "--project", "default",
                     check=True).stdout.strip()
        job = c.submit(command=["true"], gpus=1)
        p = c.cli("token", "rotate", "admin", check=True)
        new = p.stdout.strip()
        assert len(new) == 64 and new != old, p.stdout
        c.admin = new  # what the harness's calls send from now on
        assert "1 earlier one(s) stop working" in p.stderr, p.stderr
        assert file_token(c, "admin.token") == new
        refused_as_rotated(c, old, "admin")
        assert c.api("GET", f"/v1/jobs/{job['id']}", token=new)["id"] == job["id"]
        # other tokens and the cluster are untouched
        assert c.api("GET", f"/v1/jobs/{job['id']}", token=user)["id"] == job["id"]
        c.wait_final([job["id"]], timeout=30)
        # only the admin token rotates, once each call, and says what it did
        status, out = c.request("POST", "/v1/tokens:rotate", {"kind": "admin"}, token=user)
        assert status == 403, (status, out)
        for body, field in (({"kind": "user"}, "kind"), ({}, "kind"),
                            ({"kind": "admin", "why": 1}, "why")):
            status, out = c.request("POST", "/v1/tokens:rotate", body, token=new)
            assert status == 400 and out["error"]["field"] == field, (body, status, out)
        p = c.cli("token", "rotate", "nodes")
        assert p.returncode == 2 and "rotate needs 'admin' or 'join'" in p.stderr, p.stderr
        again = c.api("POST", "/v1/tokens:rotate", {"kind": "admin"}, token=new, expect=201)
        assert again["rotated"] == 1 and again["kind"] == "admin", again
        assert "file_error" not in again, again
        c.admin = again["token"]
        refused_as_rotated(c, new, "admin")
        # a restart reads the file: the last token works, none before it
        c.kill_server()
        c.start_server()
        assert c.admin == again["token"]
        c.api("GET", "/v1/jobs")
        refused_as_rotated(c, old, "admin")
        refused_as_rotated(c, new, "admin")


def test_a_data_directory_still_holding_a_rotated_token_gets_a_new_one():
    """Another HA server's DATA/admin.token, or one restored from a backup,
    still holds the token rotated out: its start must not make it valid
    again (it used to store the file's hash as the admin's)."""
    with Cluster(agents=0) as c:
        old = c.admin
        rotated = c.api("POST", "/v1/tokens:rotate", {"kind": "admin"}, expect=201)["token"]
        c.admin = rotated
        c.kill_server()
        with open(os.path.join(c.data, "admin.token"), "w") as f:
            f.write(old + "\n")
        c.start_server()
        fresh = file_token(c, "admin.token")
        assert fresh not in (old, rotated)
        assert "holds a token rotated out (tide token rotate admin): writing a new one" in \
            c.log("server"), c.log("server")
        refused_as_rotated(c, old, "admin")
        c.api("GET", "/v1/jobs", token=fresh)
        c.api("GET", "/v1/jobs", token=rotated)


def test_rotating_the_join_token_keeps_agents_and_registers_only_with_the_new_one():
    with Cluster(agents=1) as c:
        old = c.join
        new = c.cli("token", "rotate", "join", check=True).stdout.strip()
        assert file_token(c, "join.token") == new != old
        status, out = c.request("POST", "/v1/agent/register", {"name": "gpu-x", "gpus": []},
                                token=old)
        assert status == 401 and "this join token was rotated out" in out["error"]["message"], out
        # the registered agent goes on with its node token
        job = c.submit(command=["true"], gpus=1)
        assert c.wait_final([job["id"]], timeout=30)[job["id"]]["state"] == "succeeded"
        assert c.node("node-1")["state"] == "ready"
        # a new agent registers with DATA/join.token, which holds the new one
        c.start_agent("node-2")
        wait_until(lambda: c.node("node-2")["state"] == "ready", 10, what="node-2 ready")
        # the admin token was not touched
        c.api("GET", "/v1/jobs")


def test_a_followed_log_ends_once_its_token_is_revoked_or_rotated_out():
    """A follow is checked once, when it starts; it used to stream a long
    job's output to a token revoked meanwhile for as long as the job ran."""
    with Cluster(agents=1) as c:
        job = c.submit(command=["sh", "-c", "while :; do echo tick; sleep 0.2; done"], gpus=1)
        c.wait_state(job["id"], "running")
        user = c.cli("token", "create", "--name", "mallory", "--project", "default",
                     check=True).stdout.strip()

        def follow(token):
            conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
            conn.request("GET", f"/v1/jobs/{job['id']}/logs?follow=1",
                         headers={"Authorization": f"Bearer {token}"})
            r = conn.getresponse()
            assert r.status == 200, r.status
            assert r.read1(4096).startswith(b"tick")
            return conn, r

        def ends_soon(r):
            t = time.monotonic()
            try:
                while r.read1(4096):
                    assert time.monotonic() - t < 10, "still streaming 10 s after"
            except (http.client.IncompleteRead, ConnectionError):
                pass  # ended with an error: what a stream cut short looks like
            return time.monotonic() - t

        conn, r = follow(user)
        c.cli("token", "revoke", "mallory", check=True)
        took = ends_soon(r)
        conn.close()
        assert took < 8, took
        conn, r = follow(c.admin)
        c.admin = c.api("POST", "/v1/tokens:rotate", {"kind": "admin"}, expect=201)["token"]
        took = ends_soon(r)
        conn.close()
        assert took < 8, took
        assert c.job(job["id"])["state"] == "running"  # the job goes on
        c.api("DELETE", f"/v1/jobs/{job['id']}")


if __name__ == "__main__":
    run_tests([
        test_rotating_the_admin_token_stops_the_old_one_for_good,
        test_a_data_directory_still_holding_a_rotated_token_gets_a_new_one,
        test_rotating_the_join_token_keeps_agents_and_registers_only_with_the_new_one,
        test_a_followed_log_ends_once_its_token_is_revoked_or_rotated_out,
    ])
