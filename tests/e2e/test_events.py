"""End to end: the event log. A job's timeline from submit to its end, a
preempted and requeued job, a node lost and back, a pool's events, the
filters (node, pool, project, kind, tail, since), bad filters named, project
tokens seeing only their projects, and `tide events` with --follow."""
import json
import os
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, ApiError, Cluster, run_tests, wait_until  # noqa: E402

QUEUES = """
queues:
  - name: default
  - name: urgent
    priority_min: 100
    priority_max: 200
    priority: 150
  - name: spare
    priority_min: -100
    priority_max: -1
    priority: -50
    preemptible: true
"""

POOL = """pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 1
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 0
    max_nodes: 1
    boot_timeout_s: 60
    price_per_node_hour: 1.00
    billing: on_demand
    scale_down_window_s: 1
    scale_down_utilization: 0
    cooldown_s: 0
"""


def events(c, query="", token=None):
    return c.api("GET", "/v1/events" + (f"?{query}" if query else ""), token=token)["events"]


def kinds_of(evs):
    return [e["kind"] for e in evs]


def test_a_job_timeline_runs_from_submitted_to_succeeded():
    with Cluster(agents=1) as c:
        j = c.submit(command=["sh", "-c", "sleep 1.5; exit 0"], gpus=2, project="vision")
        c.wait_state(j["id"], "running")
        c.wait_final([j["id"]])
        evs = events(c, f"job={j['id']}")
        assert kinds_of(evs) == ["job_submitted", "job_starting", "job_running", "job_succeeded"], evs
        assert all(e["job_id"] == j["id"] and e["project"] == "vision" and e["pool"] is None
                   for e in evs), evs
        assert evs[0]["node"] is None and all(e["node"] == "node-1" for e in evs[1:]), evs
        assert "node-1 GPUs 0,1" in evs[1]["message"] and "attempt 1" in evs[1]["message"], evs
        assert "exit 0" in evs[3]["message"], evs
        assert [e["id"] for e in evs] == sorted(e["id"] for e in evs), evs
        assert evs[0]["time"] <= evs[1]["time"] <= evs[2]["time"] <= evs[3]["time"], evs
        # A job that fails says how.
        f = c.submit(command=["sh", "-c", "exit 3"], gpus=1)
        c.wait_final([f["id"]])
        last = events(c, f"job={f['id']}&tail=1")
        assert kinds_of(last) == ["job_failed"] and "exit 3" in last[0]["message"], last
        # The CLI prints the same timeline as a table, and the JSON as the API has it.
        out = c.cli("events", "--job", str(j["id"]), check=True).stdout.splitlines()
        assert out[0].split() == ["TIME", "KIND", "JOB", "NODE", "MESSAGE"], out
        assert [ln.split()[2] for ln in out[1:]] == kinds_of(evs), out
        assert all(ln.split()[3] == str(j["id"]) for ln in out[1:]), out
        js = json.loads(c.cli("events", "--job", str(j["id"]), "--json", check=True).stdout)
        assert js["events"] == evs and js["more"] is False, js
        show = c.cli("show", str(j["id"]), check=True).stdout
        assert "last events:" in show and show.rstrip().endswith("exit 0"), show
        assert show.index("job_running") < show.index("job_succeeded"), show
        h = c.cli("events", "--help")
        assert h.returncode == 0 and "usage: tide events" in h.stdout and "--follow" in h.stdout, h


def test_a_preempted_job_names_its_preemptor_and_is_requeued():
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=QUEUES, kill_grace_s=1) as c:
        low = c.submit(command=["sleep", "60"], gpus=1, queue="spare")
        c.wait_state(low["id"], "running")
        high = c.submit(command=["sleep", "2"], gpus=1, queue="urgent")
        c.wait_state(high["id"], ["running", "succeeded"])
        # Back on the GPU once the urgent job is done: a second attempt.
        wait_until(lambda: kinds_of(events(c, f"job={low['id']}")).count("job_starting") == 2, 30,
                   what="the preempted job started again")
        c.api("DELETE", f"/v1/jobs/{low['id']}")
        c.wait_final([low["id"], high["id"]])
        evs = events(c, f"job={low['id']}")
        k = kinds_of(evs)
        assert k[:4] == ["job_submitted", "job_starting", "job_running", "job_preempted"], evs
        pre = evs[3]
        assert f"preempted by job {high['id']}" in pre["message"] and pre["node"] == "node-1", evs
        req = evs[4]
        assert req["kind"] == "job_requeued" and "attempt 1" in req["message"] \
            and "preempted" in req["message"], evs
        assert "attempt 2" in evs[k.index("job_starting", 2)]["message"], evs
        assert "job_cancel_requested" in k and k[-1] == "job_cancelled", evs
        # The kind filter: exact names and prefixes, several at once.
        only = events(c, f"job={low['id']}&kind=job_preempted,job_requeued")
        assert kinds_of(only) == ["job_preempted", "job_requeued"], only
        assert kinds_of(events(c, f"job={low['id']}&kind=job_")) == k
        assert kinds_of(events(c, f"job={low['id']}&kind=job_s*")) == \
            [x for x in k if x.startswith("job_s")]


def test_node_filter_shows_a_node_lost_and_back_with_its_jobs():
    with Cluster(agents=2, node_timeout_ms=1500) as c:
        j = c.submit(command=["sleep", "60"], gpus=4, retries=2)
        c.wait_state(j["id"], "running")
        node = c.job(j["id"])["node"]
        other = "node-2" if node == "node-1" else "node-1"
        agent = c.agents[node]
        os.killpg(agent.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: c.node(node)["state"] == "lost", 20, what="node lost")
        finally:
            os.killpg(agent.pid, signal.SIGCONT)
        wait_until(lambda: c.node(node)["state"] == "ready", 20, what="node back")
        evs = events(c, f"node={node}")
        assert evs and all(e["node"] == node for e in evs), evs
        k = kinds_of(evs)
        assert k[0] == "node_registered" and "node_lost" in k and "node_back" in k, evs
        assert k.index("node_lost") < k.index("node_back"), evs
        assert "heartbeat" in evs[k.index("node_lost")]["message"], evs
        # The job's attempt there is in the node's timeline, and the requeue says why.
        mine = [e for e in evs if e["job_id"] == j["id"]]
        assert kinds_of(mine)[:3] == ["job_starting", "job_running", "job_requeued"], mine
        assert "node lost" in mine[2]["message"], mine
        assert not [e for e in events(c, f"node={other}") if e["kind"] == "node_lost"]
        nodes_only = c.cli("events", "--node", node, "--kind", "node_", check=True).stdout
        lines = nodes_only.splitlines()[1:]
        assert [ln.split()[2] for ln in lines] == [x for x in k if x.startswith("node_")], nodes_only
        assert events(c, "node=no-such-node") == []
        c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_pool_filter_shows_scaling_and_the_jobs_on_its_nodes():
    with Cluster(agents=0, config=POOL) as c:
        j = c.submit(command=["true"], gpus=1)
        c.wait_final([j["id"]], timeout=90)
        evs = events(c, "pool=elastic")
        assert evs and all(e["pool"] == "elastic" for e in evs), evs
        k = kinds_of(evs)
        assert k[0] == "pool_scale_up", evs
        assert "job_starting" in k and "job_succeeded" in k, evs
        # Submitted before any node was chosen: no pool, so not in the pool's timeline.
        assert "job_submitted" not in k, evs
        assert events(c, "pool=other") == []


def test_bad_filters_are_refused_naming_the_parameter():
    with Cluster(agents=0) as c:
        for query, field in (("bogus=1", "bogus"), ("job=abc", "job"), ("job=0", "job"),
                             ("since=-1", "since"), ("tail=0", "tail"), ("limit=x", "limit"),
                             ("tail=5&limit=5", "tail"), ("kind=Job", "kind"), ("kind=", "kind"),
                             ("kind=job_,,node_", "kind"), ("from=yesterday", "from"),
                             ("to=2026-13-01", "to"), ("from=2026-02-30", "from"),
                             ("from=2026-03-02&to=2026-03-01", "to"), ("node=", "node"),
                             ("project=" + "p" * 80, "project")):
            try:
                c.api("GET", f"/v1/events?{query}")
                raise AssertionError(f"{query} accepted")
            except ApiError as e:
                assert e.status == 400 and e.body["error"]["field"] == field, (query, e.body)
                assert e.body["error"]["message"].startswith(field), (query, e.body)
        # Good times are accepted: seconds and dates; a range in the past is empty.
        assert events(c, "to=2001-01-01") == []
        assert events(c, "from=2001-01-01T00:00:00Z&to=1764680000.5") == []
        assert events(c, "from=1000000000&kind=node_registered") == []
        p = c.cli("events", "--kind", "BAD")
        assert p.returncode == 2 and "kind" in p.stderr, p
        p = c.cli("events", "--tail", "x")
        assert p.returncode == 2 and "--tail" in p.stderr, p
        p = c.cli("events", "stray")
        assert p.returncode == 2, p


def test_project_tokens_see_only_their_projects_events():
    with Cluster(agents=1) as c:
        a = c.api("POST", "/v1/tokens", {"name": "alice", "projects": ["vision"]}, expect=201)["token"]
        b = c.api("POST", "/v1/tokens", {"name": "bob", "projects": ["speech"]}, expect=201)["token"]
        ja = c.submit(token=a, project="vision", command=["true"], gpus=1)
        jb = c.submit(token=b, project="speech", command=["true"], gpus=1)
        c.wait_final([ja["id"], jb["id"]])
        mine = events(c, token=b)
        assert mine and all(e["project"] == "speech" and e["job_id"] == jb["id"] for e in mine), mine
        assert events(c, f"job={ja['id']}", token=b) == []
        assert events(c, "kind=node_", token=b) == []  # nodes belong to no project
        try:
            c.api("GET", "/v1/events?project=vision", token=b)
            raise AssertionError("another project's events shown")
        except ApiError as e:
            assert e.status == 403 and e.body["error"]["field"] == "project", e.body
        assert {e["project"] for e in events(c, "project=vision", token=a)} == {"vision"}
        # The admin sees everything: both projects' jobs and the node.
        everything = events(c)
        assert {e["project"] for e in everything} == {None, "vision", "speech"}, everything
        out = c.cli("events", token=b, check=True).stdout
        assert str(jb["id"]) in out and "node_registered" not in out, out


def test_tail_since_limit_and_follow():
    with Cluster(agents=1) as c:
        ids = [c.submit(command=["true"], gpus=1)["id"] for _ in range(4)]
        c.wait_final(ids)
        everything = c.api("GET", "/v1/events")
        assert everything["more"] is False
        allev = everything["events"]
        tail = c.api("GET", "/v1/events?tail=3")
        assert tail["events"] == allev[-3:] and tail["more"] is True, tail
        first = c.api("GET", "/v1/events?limit=2")
        assert first["events"] == allev[:2] and first["more"] is True, first
        after = events(c, f"since={allev[-3]['id']}")
        assert after == allev[-2:], after
        assert events(c, f"since={allev[-1]['id']}") == []
        submitted = [e["job_id"] for e in events(c, "kind=job_submitted&tail=2")]
        assert submitted == ids[-2:], submitted
        # The CLI: --tail, and --follow printing new events as they happen.
        out = c.cli("events", "--tail", "2", check=True).stdout.splitlines()
        assert len(out) == 3 and out[-1].split()[2] == allev[-1]["kind"], out
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        p = subprocess.Popen([TIDE, "events", "-f", "--json", "--kind", "job_submitted", "--tail", "1"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # A line that never comes must fail the test, not hang it.
        guard = threading.Timer(30, p.kill)
        guard.start()
        try:
            line = json.loads(p.stdout.readline() or "null")
            assert line and line["job_id"] == ids[-1], line
            new = c.submit(command=["true"], gpus=1)
            line = json.loads(p.stdout.readline() or "null")
            assert line and line["job_id"] == new["id"] and line["kind"] == "job_submitted", line
        finally:
            guard.cancel()
            p.terminate()
            p.wait(10)
            p.stdout.close()
            p.stderr.close()


if __name__ == "__main__":
    run_tests([
        test_a_job_timeline_runs_from_submitted_to_succeeded,
        test_a_preempted_job_names_its_preemptor_and_is_requeued,
        test_node_filter_shows_a_node_lost_and_back_with_its_jobs,
        test_pool_filter_shows_scaling_and_the_jobs_on_its_nodes,
        test_bad_filters_are_refused_naming_the_parameter,
        test_project_tokens_see_only_their_projects_events,
        test_tail_since_limit_and_follow,
    ])
