"""End to end: many jobs in one request. POST /v1/jobs:batch gives each
spec its own id or its own error, in order; what it answered survives a
kill -9 of the server right after the answer; an Idempotency-Key replays
job by job; `tide submit --file jobs.jsonl` reports refused lines by file
and line and submits nothing from a malformed file."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests  # noqa: E402


def batch(c, specs, headers=None, expect=200):
    status, out = c.request("POST", "/v1/jobs:batch", {"jobs": specs}, headers=headers)
    assert status == expect, (status, out)
    return out


def test_each_spec_gets_its_own_id_or_error_in_order():
    with Cluster(agents=0) as c:
        out = batch(c, [
            {"command": ["true"], "gpus": 0, "name": "a"},
            {"command": "not argv", "gpus": 0},
            {"command": ["true"], "gpus": 0, "array": 3, "name": "arr"},
            {"command": ["true"], "gpus": 0, "bogus": 1},
            7,
        ])
        r = out["jobs"]
        assert len(r) == 5 and out["created"] == 2 and out["failed"] == 3, out
        assert r[1]["status"] == 400 and r[1]["error"]["field"] == "command", r[1]
        assert r[3]["error"]["field"] == "bogus", r[3]
        assert r[4]["error"]["field"] == "jobs" and "jobs[4]" in r[4]["error"]["message"], r[4]
        assert len(r[2]["ids"]) == 3 and r[2]["id"] == r[2]["ids"][0], r[2]
        a = c.job(r[0]["id"])
        assert a["name"] == "a" and a["state"] == "pending", a
        members = [c.job(i)["name"] for i in r[2]["ids"]]
        assert members == ["arr[0]", "arr[1]", "arr[2]"], members


def test_a_spec_no_node_could_hold_fails_alone_in_its_transaction():
    """Whether a job could ever run is checked where the batch is written:
    the refused spec gets its own 400, the others are stored."""
    with Cluster(agents=1, fake_gpus="4xH200:141GB") as c:
        out = batch(c, [
            {"command": ["sleep", "30"], "gpus": 4, "name": "fits"},
            {"command": ["true"], "gpus": 8, "name": "never"},
            {"command": ["true"], "gpus": 1, "name": "waits", "array": 2},
        ])
        r = out["jobs"]
        assert out["created"] == 2 and out["failed"] == 1, out
        assert r[1]["status"] == 400 and r[1]["error"]["field"] == "gpus", r[1]
        assert "the largest has 4" in r[1]["error"]["message"], r[1]
        names = sorted(j["name"] for j in c.jobs())
        assert names == ["fits", "waits[0]", "waits[1]"], names
        c.cli("cancel", "--state", "pending", check=True)
        c.cli("cancel", "--state", "running", check=True)


def test_a_bad_body_is_refused_naming_jobs():
    with Cluster(agents=0) as c:
        for body in ({"jobs": []}, {"jobs": {}}, {"job": []}, [], {"jobs": [{}] * 10001}):
            status, out = c.request("POST", "/v1/jobs:batch", body)
            assert status == 400 and out["error"]["field"] == "jobs", (body, status, out)
        status, out = c.request("POST", "/v1/jobs:batch", raw=b"{not json")
        assert status == 400, (status, out)
        # a node's token may not submit
        status, out = c.request("POST", "/v1/jobs:batch", {"jobs": [{"command": ["true"]}]},
                                token=c.join)
        assert status == 403, (status, out)


def test_answered_jobs_survive_a_kill_9_right_after_the_answer():
    with Cluster(agents=0) as c:
        specs = [{"command": ["true"], "gpus": 0, "name": f"j{i}"} for i in range(500)]
        out = batch(c, specs)
        ids = [r["id"] for r in out["jobs"]]
        c.kill_server()
        c.start_server()
        for i, job_id in enumerate(ids):
            job = c.job(job_id)
            assert job["name"] == f"j{i}" and job["state"] == "pending", job
        assert len(set(ids)) == 500


def test_an_array_whose_long_name_is_cut_inside_a_character_is_stored_whole():
    """A member's name is the array's cut to leave room for [i]: the cut
    falls on a UTF-8 boundary, so a long name ending in two-byte characters
    neither fails the array nor the job batched beside it."""
    with Cluster(agents=0) as c:
        name = "a" * 247 + "\u00e9" * 4  # 255 bytes: a cut at 248 would split the first é
        out = batch(c, [{"command": ["true"], "gpus": 0, "name": name, "array": 3},
                        {"command": ["true"], "gpus": 0, "name": "beside"}])
        r = out["jobs"]
        assert all("id" in j for j in r), r
        members = [c.job(i)["name"] for i in r[0]["ids"]]
        assert members == ["a" * 247 + f"[{i}]" for i in range(3)], members
        assert c.job(r[1]["id"])["name"] == "beside"


def test_a_big_array_and_its_neighbours_get_their_own_rows_and_events():
    """10,000 tasks and two single jobs in one batch (many multi-row
    statements, one spec dumped for the array's members): each task its
    own name, TIDE_ARRAY_INDEX and job_submitted event, all kept across a
    kill -9; one task more is refused naming array."""
    with Cluster(agents=0) as c:
        name = 'we "quote" / caf\u00e9'
        out = batch(c, [
            {"command": ["true"], "gpus": 0, "name": "before"},
            {"command": ["true"], "gpus": 0, "name": name, "array": 10000,
             "env": {"KEEP": "1", "TIDE_ARRAY_INDEX": "given"}},
            {"command": ["true"], "gpus": 0, "name": "after"},
            {"command": ["true"], "gpus": 0, "name": "too big", "array": 10001},
        ])
        r = out["jobs"]
        assert out["created"] == 3 and out["failed"] == 1, (out["created"], out["failed"])
        assert r[3]["error"]["field"] == "array", r[3]
        assert "between 1 and 10000" in r[3]["error"]["message"], r[3]
        ids = r[1]["ids"]
        assert len(ids) == 10000 and ids == sorted(ids) and r[0]["id"] < ids[0], ids[:3]
        assert r[2]["id"] > ids[-1], r[2]
        c.kill_server()
        c.start_server()
        jobs = {j["id"]: j for j in c.jobs("?limit=100000")}
        assert len(jobs) == 10002, len(jobs)
        for i in (0, 1, 63, 64, 4999, 9999):
            job = jobs[ids[i]]
            assert job["name"] == f"{name}[{i}]", job["name"]
            assert job["spec"]["name"] == job["name"], job["spec"]
            assert job["spec"]["env"] == {"KEEP": "1", "TIDE_ARRAY_INDEX": str(i)}, job["spec"]
            assert "array" not in job["spec"], job["spec"]
        assert sorted(j["name"] for j in jobs.values())[:3] == ["after", "before", f"{name}[0]"]
        events = c.api("GET", "/v1/events?kind=job_submitted&limit=100000")["events"]
        assert sorted(e["job_id"] for e in events) == sorted(jobs), len(events)
        by_job = {e["job_id"]: e for e in events}
        assert by_job[ids[7]]["message"] == "submitted as part of an array", by_job[ids[7]]
        assert by_job[r[0]["id"]]["message"] == "submitted", by_job[r[0]["id"]]
        assert all(e["project"] == "default" for e in events)


def test_a_request_that_would_create_too_much_is_refused_whole_and_makes_nothing():
    """One request may create at most 100,000 jobs, array members counted,
    and 64 MiB of specs, each spec's size times its array: a 1 KB batch of
    large arrays, or one large spec times its array, is refused before
    anything is made, naming jobs (a batch) or array (one spec). The sizes
    bench/submit.py sends (5,000 specs, arrays of 1,000) still pass."""
    with Cluster(agents=0) as c:
        many = [{"command": ["true"], "gpus": 0, "array": 10000}] * 11
        status, out = c.request("POST", "/v1/jobs:batch", {"jobs": many})
        assert status == 400 and out["error"]["field"] == "jobs", (status, out.get("error"))
        assert "110000 jobs" in out["error"]["message"], out
        wide = {"command": ["true"], "gpus": 0, "env": {"PAD": "x" * 100000}, "array": 700}
        status, out = c.request("POST", "/v1/jobs:batch", {"jobs": [wide]})
        assert status == 400 and out["error"]["field"] == "jobs", (status, out.get("error"))
        assert "at most 64 MiB" in out["error"]["message"], out
        status, out = c.request("POST", "/v1/jobs", wide)
        assert status == 400 and out["error"]["field"] == "array", (status, out.get("error"))
        assert "at most 64 MiB" in out["error"]["message"], out
        assert c.jobs() == []
        spec = {"command": ["true"], "gpus": 0, "name": "bench"}
        assert batch(c, [spec] * 5000)["created"] == 5000
        assert len(c.api("POST", "/v1/jobs", dict(spec, array=1000), expect=201)["jobs"]) == 1000
        out = batch(c, [dict(spec, array=1000)])
        assert out["created"] == 1 and len(out["jobs"][0]["ids"]) == 1000, out["created"]


def test_an_idempotency_key_replays_job_by_job():
    with Cluster(agents=0) as c:
        specs = [{"command": ["true"], "gpus": 0, "name": "x"},
                 {"command": ["true"], "gpus": 0, "name": "y"}]
        first = batch(c, specs, headers={"Idempotency-Key": "batch-1"})
        again = batch(c, specs, headers={"Idempotency-Key": "batch-1"})
        assert [r["id"] for r in again["jobs"]] == [r["id"] for r in first["jobs"]], (first, again)
        assert len(c.jobs()) == 2
        changed = batch(c, [specs[0], dict(specs[1], name="z")], headers={"Idempotency-Key": "batch-1"})
        assert changed["jobs"][0]["id"] == first["jobs"][0]["id"], changed
        assert changed["jobs"][1]["status"] == 409, changed
        assert changed["jobs"][1]["error"]["field"] == "Idempotency-Key", changed
        assert len(c.jobs()) == 2


def test_submit_file_reports_refused_lines_and_submits_the_rest():
    with Cluster(agents=0) as c:
        path = os.path.join(c.dir, "jobs.jsonl")
        with open(path, "w") as f:
            f.write('{"command": ["true"], "name": "one"}\n')
            f.write("# a comment\n\n")
            f.write('{"command": ["true"], "retries": -1}\n')
            f.write('{"command": ["true"], "name": "three"}\n')
        p = c.cli("submit", "--gpus", "0", "--file", path)
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert f"{path}:4:" in p.stderr and "retries" in p.stderr, p.stderr
        assert "submitted jobs" in p.stdout, p.stdout
        names = sorted(j["name"] for j in c.jobs())
        assert names == ["one", "three"], names
        # --gpus applied to every line; workdir defaults to where tide ran
        job = [j for j in c.jobs() if j["name"] == "one"][0]
        assert job["spec"]["gpus"] == 0 and job["spec"]["workdir"] == c.dir, job["spec"]


def test_submit_file_splits_its_requests_by_array_members_too():
    # Eleven lines of 10,000-member arrays, each one valid, were sent as one
    # request of 110,000 jobs, which the server refuses whole.
    with Cluster(agents=0) as c:
        path = os.path.join(c.dir, "arrays.jsonl")
        with open(path, "w") as f:
            f.write('{"command": ["true"], "gpus": 0, "array": 10000}\n' * 11)
        p = c.cli("submit", "--file", path, "--json", timeout=300)
        assert p.returncode == 0, (p.returncode, p.stderr[-500:])
        answers = json.loads(p.stdout)["jobs"]
        assert len(answers) == 11 and all(len(a["ids"]) == 10000 for a in answers), \
            [sorted(a) for a in answers[:1]]
        assert c.api("GET", "/v1/jobs?limit=1")["jobs"][0]["id"] == 110000


def test_submit_file_with_a_malformed_line_submits_nothing():
    with Cluster(agents=0) as c:
        path = os.path.join(c.dir, "bad.jsonl")
        with open(path, "w") as f:
            f.write('{"command": ["true"], "gpus": 0}\n{"command": [\n')
        p = c.cli("submit", "--file", path)
        assert p.returncode == 2 and f"{path}:2" in p.stderr, (p.returncode, p.stderr)
        assert c.jobs() == []
        p = c.cli("submit", "--file", path, "--", "true")
        assert p.returncode == 2 and "--file" in p.stderr, (p.returncode, p.stderr)
        # a line no request can carry, even alone (its JSON over the server's
        # 1 MiB body), is refused before anything is sent: found when its
        # request got 413, the lines before it had been submitted
        with open(path, "w") as f:
            f.write('{"command": ["true"], "gpus": 0}\n')
            f.write(json.dumps({"command": ["true"], "gpus": 0, "name": "big",
                                "env": {"X": "x" * (1100 * 1024)}}) + "\n")
        p = c.cli("submit", "--file", path)
        assert p.returncode == 2 and f"{path}:2: the spec is" in p.stderr, (p.returncode,
                                                                           p.stderr[-300:])
        assert c.jobs() == []


def test_submit_file_json_and_wait():
    with Cluster(agents=1) as c:
        lines = "".join(json.dumps({"command": ["sh", "-c", f"exit {i}"], "gpus": 1}) + "\n"
                        for i in (0, 3))
        p = c.cli("submit", "--file", "-", "--json", input=lines)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert len(out["jobs"]) == 2 and all("id" in r for r in out["jobs"]), out
        p = c.cli("submit", "--file", "-", "--wait", input=lines)
        assert p.returncode == 3, (p.returncode, p.stdout, p.stderr)
        assert "succeeded" in p.stdout and "failed" in p.stdout, p.stdout


if __name__ == "__main__":
    run_tests([
        test_each_spec_gets_its_own_id_or_error_in_order,
        test_a_spec_no_node_could_hold_fails_alone_in_its_transaction,
        test_a_bad_body_is_refused_naming_jobs,
        test_answered_jobs_survive_a_kill_9_right_after_the_answer,
        test_a_big_array_and_its_neighbours_get_their_own_rows_and_events,
        test_an_array_whose_long_name_is_cut_inside_a_character_is_stored_whole,
        test_a_request_that_would_create_too_much_is_refused_whole_and_makes_nothing,
        test_an_idempotency_key_replays_job_by_job,
        test_submit_file_reports_refused_lines_and_submits_the_rest,
        test_submit_file_with_a_malformed_line_submits_nothing,
        test_submit_file_json_and_wait,
    ])
