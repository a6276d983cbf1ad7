"""End to end: commits made under the server's lock and flushed to disk
after it (docs/store.md). Every answer (a 201, a heartbeat reply, a woken
wait carrying starts, a listing) leaves only once the commits it may depend
on are flushed: the server checks each answer as it goes and counts the
ones that would have left early in tide_answers_unflushed_total, which must
stay 0 under concurrent submits, listings and agents running jobs. A server
killed with SIGKILL while clients submit keeps every job it acknowledged."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from harness import STORE, Cluster, run_tests, wait_until  # noqa: E402


def metrics(c):
    out = {}
    for line in c.api("GET", "/metrics").splitlines():
        name, _, value = line.partition(" ")
        if name.startswith(("tide_store_", "tide_answers_")):
            out[name] = float(value)
    return out


def all_job_ids(c):
    ids, query = set(), ""
    while True:
        page = c.api("GET", "/v1/jobs" + query)
        ids.update(j["id"] for j in page["jobs"])
        if not page["next"]:
            return ids
        query = f"?cursor={page['next']}"


def submit_from_threads(c, threads, per_thread, spec, acknowledged, stop=None):
    """threads clients submitting per_thread jobs each; the ids answered 201
    go to acknowledged (a list)."""
    lock = threading.Lock()

    def client():
        for _ in range(per_thread):
            if stop is not None and stop.is_set():
                return
            try:
                status, out = c.request("POST", "/v1/jobs", spec)
            except OSError:
                return  # the server is gone
            if status == 201:
                with lock:
                    acknowledged.append(out["id"])
    ts = [threading.Thread(target=client) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts


def test_no_answer_leaves_before_the_commits_it_depends_on_are_flushed():
    with Cluster(agents=2, fake_gpus="4xH200:141GB", heartbeat_ms=200) as c:
        before = metrics(c)
        ids = []
        ts = submit_from_threads(c, 8, 12, {"command": ["true"], "gpus": 1, "name": "d"}, ids)
        listings = []

        def lister():
            for _ in range(20):
                listings.append(len(c.jobs()))
        t = threading.Thread(target=lister)
        t.start()
        for x in ts + [t]:
            x.join()
        assert len(ids) == 96, len(ids)
        final = c.wait_final(ids, 120)
        assert all(j["state"] == "succeeded" for j in final.values()), \
            [j for j in final.values() if j["state"] != "succeeded"][:3]
        assert all(j["attempt"] == 1 for j in final.values())
        after = metrics(c)
        assert after["tide_answers_unflushed_total"] == 0, after
        commits = after["tide_store_commits_total"] - before["tide_store_commits_total"]
        flushes = after["tide_store_flushes_total"] - before["tide_store_flushes_total"]
        assert commits > 0, after
        if STORE == "postgres":
            assert flushes == 0, after  # a commit is durable when it returns
        else:
            # the WAL is synced by tide, not by each commit; never more than once a commit
            assert 0 < flushes <= commits, (flushes, commits)


def test_a_killed_server_keeps_every_job_it_acknowledged():
    with Cluster(agents=0) as c:
        ids, stop = [], threading.Event()
        ts = submit_from_threads(c, 6, 1000, {"command": ["true"], "gpus": 1, "name": "k"},
                                 ids, stop)
        wait_until(lambda: len(ids) >= 150, 60, what="150 acknowledged submits")
        c.kill_server()
        stop.set()
        for t in ts:
            t.join()
        acknowledged = list(ids)
        c.start_server()
        stored = all_job_ids(c)
        lost = sorted(set(acknowledged) - stored)
        assert not lost, f"{len(lost)} acknowledged jobs lost: {lost[:10]}"
        assert metrics(c)["tide_answers_unflushed_total"] == 0


if __name__ == "__main__":
    run_tests([
        test_no_answer_leaves_before_the_commits_it_depends_on_are_flushed,
        test_a_killed_server_keeps_every_job_it_acknowledged,
    ])
