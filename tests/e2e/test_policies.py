"""End to end: queues and their caps, escalation, preemption with
checkpoint-resume, retries with backoff, backfill reservations."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

QUEUES = """
scheduler:
  retry_backoff_s: 1
queues:
  - name: default
  - name: capped
    max_running_jobs: 1
  - name: urgent
    priority_min: 100
    priority_max: 200
    priority: 150
  - name: spare
    priority_min: -100
    priority_max: -1
    priority: -50
    preemptible: true
  - name: slow
    max_wait_s: 1
    escalation: 100
  - name: notebooks
    idle_util_pct: 10
    idle_after_s: 2
"""

# A job that counts to 8, one step a second, saving its progress in
# TIDE_CHECKPOINT_DIR and resuming from it; SIGTERM saves and exits.
CHECKPOINTING = r'''
dir="$TIDE_CHECKPOINT_DIR"; step=0
if [ -f "$dir/step" ]; then step=$(cat "$dir/step"); echo "resumed at $step on attempt $TIDE_ATTEMPT"; fi
trap 'echo $step > "$dir/step"; echo "checkpointed at $step"; exit 0' TERM
while [ $step -lt 8 ]; do sleep 0.5 & wait $!; step=$((step + 1)); echo $step > "$dir/step"; done
echo "result $step"
'''


def test_unknown_queue_and_out_of_range_priority_are_refused():
    with Cluster(agents=0, config=QUEUES) as c:
        status, out = c.request("POST", "/v1/jobs", {"command": ["true"], "queue": "nope"})
        assert status == 400 and out["error"]["field"] == "queue", out
        assert "capped" in out["error"]["message"], out
        status, out = c.request("POST", "/v1/jobs", {"command": ["true"], "queue": "urgent", "priority": 5})
        assert status == 400 and out["error"]["field"] == "priority", out
        j = c.submit(command=["true"], queue="spare")
        assert j["priority"] == -50 and j["spec"]["preemptible"] is True, j
        table = c.cli("queues", check=True).stdout
        rows = {line.split()[0]: line for line in table.splitlines()[1:]}
        assert set(rows) == {"default", "capped", "urgent", "spare", "slow", "notebooks"}, table
        assert "0/1" in rows["capped"] and "100..200" in rows["urgent"], table
        assert "<10% for 2s" in rows["notebooks"], table
        listed = c.api("GET", "/v1/queues")["queues"]
        assert [q["pending_jobs"] for q in listed if q["name"] == "spare"] == [1], listed


def test_builtin_queues_exist_without_a_config():
    with Cluster(agents=0) as c:
        for q in ("inference", "training", "batch", "render"):
            assert c.submit(command=["true"], queue=q)["queue"] == q
        assert c.submit(command=["true"], queue="batch")["spec"]["preemptible"] is True


def test_queue_cap_keeps_one_job_running_at_a_time():
    with Cluster(agents=1, config=QUEUES) as c:
        ids = [c.submit(command=["sleep", "1"], gpus=1, queue="capped")["id"] for _ in range(3)]
        seen_running = []

        def sample():
            # One listing, answered under one lock: reading the jobs one by
            # one could see A still running and then B already started.
            listed = {j["id"]: j for j in c.jobs("?queue=capped")}
            jobs = [listed[i] for i in ids]
            running = [j for j in jobs if j["state"] in ("starting", "running")]
            seen_running.append(len(running))
            waiting = [j for j in jobs if j["state"] == "pending"]
            assert all("cap" in (j.get("pending_reason") or "cap") for j in waiting), waiting
            return all(j["state"] == "succeeded" for j in jobs)
        wait_until(sample, 60, 0.1, what="capped jobs to finish one by one")
        assert max(seen_running) == 1, seen_running


def test_waiting_past_max_wait_escalates_priority():
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=QUEUES) as c:
        blocker = c.submit(command=["sleep", "30"], gpus=1)
        c.wait_state(blocker["id"], "running")
        j = c.submit(command=["true"], gpus=1, queue="slow")
        job = wait_until(lambda: (x := c.job(j["id"])).get("escalated") and x, 10,
                         what="escalation")
        assert job["effective_priority"] >= 100, job
        assert c.cli("show", str(j["id"]), check=True).stdout.count("effective_priority") == 1
        c.api("DELETE", f"/v1/jobs/{blocker['id']}")


def test_preempted_job_checkpoints_and_resumes_with_the_right_result():
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=QUEUES, kill_grace_s=5) as c:
        low = c.submit(command=["sh", "-c", CHECKPOINTING], gpus=1, queue="spare")
        c.wait_state(low["id"], "running")
        wait_until(lambda: os.path.exists(os.path.join(c.data, "checkpoints", str(low["id"]), "step")),
                   15, what="first checkpoint")
        high = c.submit(command=["sh", "-c", "echo urgent done"], gpus=1, queue="urgent")
        final = c.wait_final([high["id"], low["id"]], timeout=90)
        assert final[high["id"]]["state"] == "succeeded", final
        lowj = final[low["id"]]
        assert lowj["state"] == "succeeded" and lowj["attempt"] == 2, lowj
        log = c.logs(low["id"])
        assert "checkpointed at" in log and "resumed at" in log and "on attempt 2" in log, log
        assert log.strip().endswith("result 8"), log
        events = c.api("GET", f"/v1/events?job={low['id']}")["events"]
        assert any(e["kind"] == "job_preempted" and f"job {high['id']}" in e["message"]
                   for e in events), events
        # The urgent job ran while the preempted one waited.
        assert final[high["id"]]["end_time"] < lowj["end_time"]


def test_a_running_job_keeps_the_priority_it_started_with_across_a_server_restart():
    # Escalation counts waiting: a restart once counted a preemptible job's
    # whole run as waiting, which lifted it above the work meant to preempt it.
    config = QUEUES + """  - name: slowspare
    max_wait_s: 1
    escalation: 100
    preemptible: true
"""
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=config, kill_grace_s=2) as c:
        low = c.submit(command=["sleep", "60"], gpus=1, queue="slowspare")
        c.wait_state(low["id"], "running")
        time.sleep(3)
        c.kill_server()
        c.start_server()
        assert c.job(low["id"])["state"] == "running"
        high = c.submit(command=["true"], gpus=1, priority=10)
        final = c.wait_final([high["id"]], timeout=40)
        assert final[high["id"]]["state"] == "succeeded", final
        events = c.api("GET", f"/v1/events?job={low['id']}")["events"]
        assert any(e["kind"] == "job_preempted" for e in events), events
        c.api("DELETE", f"/v1/jobs/{low['id']}")


def test_a_gang_job_preempts_on_each_node_its_shares_need_and_runs_across_them():
    # 8 GPUs over 2 nodes of 4, each held by a preemptible job: both are
    # preempted, and the gang starts once both have stopped.
    with Cluster(agents=2, fake_gpus="4xH200:141GB", config=QUEUES, kill_grace_s=5) as c:
        spare = [c.submit(command=["sleep", "60"], gpus=4, queue="spare") for _ in range(2)]
        for j in spare:
            c.wait_state(j["id"], "running")
        gang = c.submit(command=["sh", "-c", "echo part on $(hostname)"], gpus=8, nodes=2,
                        queue="urgent")
        done = c.wait_final([gang["id"]], timeout=60)[gang["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 1, done
        for j in spare:
            events = c.api("GET", f"/v1/events?job={j['id']}")["events"]
            assert any(e["kind"] == "job_preempted" and f"job {gang['id']}" in e["message"]
                       for e in events), events
        started = [e for e in c.api("GET", f"/v1/events?job={gang['id']}")["events"]
                   if e["kind"] == "job_starting"]
        assert len(started) == 1 and "placed on 2 nodes" in started[0]["message"], started
        for j in spare:
            c.api("DELETE", f"/v1/jobs/{j['id']}")


def test_non_preemptible_work_is_never_preempted():
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=QUEUES) as c:
        normal = c.submit(command=["sleep", "4"], gpus=1)
        c.wait_state(normal["id"], "running")
        high = c.submit(command=["true"], gpus=1, queue="urgent")
        final = c.wait_final([normal["id"], high["id"]], timeout=40)
        assert final[normal["id"]]["state"] == "succeeded" and final[normal["id"]]["attempt"] == 1
        assert final[high["id"]]["start_time"] >= final[normal["id"]]["end_time"] - 0.5, final


def test_failed_attempt_is_retried_after_a_backoff():
    with Cluster(agents=1, config=QUEUES) as c:
        script = 'if [ -f "$TIDE_CHECKPOINT_DIR/tried" ]; then echo second; exit 0; fi; touch "$TIDE_CHECKPOINT_DIR/tried"; exit 3'
        j = c.submit(command=["sh", "-c", script], gpus=1, retries=2)
        waiting = wait_until(lambda: (x := c.job(j["id"])).get("pending_reason", "").startswith("retry backoff") and x,
                             15, 0.05, what="retry backoff")
        assert waiting["attempt"] == 1, waiting
        done = c.wait_final([j["id"]], 30)[j["id"]]
        assert done["state"] == "succeeded" and done["attempt"] == 2, done
        metrics = c.api("GET", "/metrics")
        assert 'tide_job_failures_total{reason="exit"} 1' in metrics, metrics


def test_backfill_reserves_gpus_for_the_blocked_job():
    with Cluster(agents=1, fake_gpus="4xH200:141GB") as c:
        a = c.submit(command=["sleep", "6"], gpus=3, est_runtime=6)
        c.wait_state(a["id"], "running")
        big = c.submit(command=["true"], gpus=4)
        blocked = wait_until(lambda: (x := c.job(big["id"])).get("reservation") and x, 10,
                             what="a reservation for the 4-GPU job")
        assert blocked["reservation"]["node"] == "node-1", blocked
        long = c.submit(command=["sleep", "30"], gpus=1, est_runtime=100)
        short = c.submit(command=["sh", "-c", "echo quick"], gpus=1, est_runtime=1)
        c.wait_final([short["id"]], 20)
        assert c.job(long["id"])["state"] == "pending", c.job(long["id"])
        final = c.wait_final([a["id"], big["id"]], 40)
        assert final[big["id"]]["state"] == "succeeded", final
        c.api("DELETE", f"/v1/jobs/{long['id']}")


def test_a_blocked_job_is_not_starved_when_running_jobs_give_no_runtime():
    # No max_runtime or est_runtime anywhere (the default): the 4-GPU job's
    # start cannot be known, but each GPU that frees is held for it rather
    # than taken by the 1-GPU jobs submitted after it.
    with Cluster(agents=1, fake_gpus="4xH200:141GB", kill_grace_s=1) as c:
        first = [c.submit(command=["sleep", str(2 + i)], gpus=1)["id"] for i in range(4)]
        wait_until(lambda: all(c.job(i)["state"] == "running" for i in first), 20,
                   what="the first 4 jobs running")
        big = c.submit(command=["true"], gpus=4)["id"]
        small = [c.submit(command=["sleep", "1"], gpus=1)["id"] for _ in range(8)]
        blocked = wait_until(lambda: (x := c.job(big)).get("reservation") and x, 10,
                             what="a reservation for the 4-GPU job")
        assert blocked["reservation"] == {"node": "node-1", "start_time": None}, blocked
        assert "start unknown" in blocked["pending_reason"], blocked
        final = c.wait_final([big] + small, 60)
        assert final[big]["state"] == "succeeded", final[big]
        before = [i for i in small if final[i]["start_time"] < final[big]["start_time"]]
        assert not before, f"1-GPU jobs {before} started before the 4-GPU job: {final}"


def test_dependencies_run_in_order_and_a_failed_one_fails_its_dependents():
    with Cluster(agents=1) as c:
        out = os.path.join(c.dir, "order")
        first = c.submit(command=["sh", "-c", f"sleep 1; echo first >> {out}"], gpus=1)
        second = c.submit(command=["sh", "-c", f"echo second >> {out}"], gpus=1, depends_on=[first["id"]])
        bad = c.submit(command=["sh", "-c", "exit 4"], gpus=1)
        orphan = c.submit(command=["true"], gpus=1, depends_on=[bad["id"], first["id"]])
        assert c.job(second["id"])["state"] == "pending"
        final = c.wait_final([first["id"], second["id"], bad["id"], orphan["id"]], 30)
        assert final[second["id"]]["state"] == "succeeded", final
        assert open(out).read().split() == ["first", "second"]
        assert final[orphan["id"]]["state"] == "failed", final
        assert final[orphan["id"]]["reason"] == f"dependency {bad['id']} failed", final
        status, err = c.request("POST", "/v1/jobs", {"command": ["true"], "depends_on": [99999]})
        assert status == 400 and err["error"]["field"] == "depends_on", err


def test_array_job_runs_each_index():
    with Cluster(agents=2) as c:
        out = c.api("POST", "/v1/jobs", {"name": "sweep", "command": ["sh", "-c", "echo index=$TIDE_ARRAY_INDEX"],
                                         "gpus": 1, "array": 5}, expect=201)
        jobs = out["jobs"]
        assert [j["name"] for j in jobs] == [f"sweep[{i}]" for i in range(5)], jobs
        final = c.wait_final([j["id"] for j in jobs], 30)
        for i, j in enumerate(jobs):
            assert final[j["id"]]["state"] == "succeeded"
            assert c.logs(j["id"]).strip() == f"index={i}"


def test_idle_job_is_warned_then_reclaimed_and_a_busy_one_is_not():
    with Cluster(agents=1, config=QUEUES) as c:
        idle = c.submit(command=["sleep", "60"], gpus=1, queue="notebooks")
        busy = c.submit(command=["sh", "-c", 'echo "util=60 mem=1000" > "$TIDE_FAKE_GPU_FILE"; sleep 5; echo done'],
                        gpus=1, queue="notebooks")
        final = c.wait_final([idle["id"], busy["id"]], 40)
        assert final[idle["id"]]["state"] == "failed", final
        assert final[idle["id"]]["reason"].startswith("idle reclaim"), final
        assert final[busy["id"]]["state"] == "succeeded", final
        kinds = [e["kind"] for e in c.api("GET", f"/v1/events?job={idle['id']}")["events"]]
        assert kinds.index("job_idle_warning") < kinds.index("job_failed"), kinds
        assert "job_idle_warning" not in [e["kind"] for e in c.api("GET", f"/v1/events?job={busy['id']}")["events"]]
        assert 'tide_job_failures_total{reason="idle_reclaim"} 1' in c.api("GET", "/metrics")


FAIR = """
projects:
  - name: vision
    quota_gpus: 2
  - name: speech
    quota_gpus: 2
    weight: 2
queues:
  - name: default
    preemptible: true
"""


def test_borrowed_gpus_are_taken_back_when_the_owner_needs_them():
    with Cluster(agents=1, fake_gpus="4xH200:141GB", config=FAIR, kill_grace_s=1) as c:
        speech = [c.submit(command=["sleep", "60"], gpus=1, project="speech")["id"] for _ in range(4)]
        wait_until(lambda: all(c.job(i)["state"] == "running" for i in speech), 20, what="speech on all GPUs")
        usage = {p["name"]: p for p in c.api("GET", "/v1/projects")["projects"]}
        assert usage["speech"]["running_gpus"] == 4 and usage["speech"]["borrowed_gpus"] == 2, usage
        # Each vision job outlives the other's submit: were the first done
        # before the second is placed, the second would take its GPU and
        # need no preemption of its own.
        vision = [c.submit(command=["sh", "-c", "sleep 2; echo vision"], gpus=1,
                           project="vision")["id"] for _ in range(2)]
        final = c.wait_final(vision, 40)
        assert all(j["state"] == "succeeded" for j in final.values()), final
        preempted = [i for i in speech if c.job(i)["attempt"] >= 1 and any(
            e["kind"] == "job_preempted" for e in c.api("GET", f"/v1/events?job={i}")["events"])]
        assert len(preempted) == 2, preempted
        # The two speech jobs within quota were never touched.
        untouched = [i for i in speech if i not in preempted]
        assert all(c.job(i)["state"] == "running" and c.job(i)["attempt"] == 1 for i in untouched)
        table = c.cli("usage", "--share", check=True).stdout
        assert "vision" in table and "speech" in table, table
        for i in speech:
            c.api("DELETE", f"/v1/jobs/{i}")
        c.wait_final(speech, 30)


def test_gang_job_spans_nodes_all_or_nothing():
    with Cluster(agents=2, fake_gpus="4xH200:141GB") as c:
        marks = os.path.join(c.dir, "ranks")
        os.makedirs(marks)
        script = (f'echo "$TIDE_GANG_RANK/$TIDE_GANG_SIZE $TIDE_GANG_NODES $CUDA_VISIBLE_DEVICES" '
                  f'> {marks}/rank$TIDE_GANG_RANK; sleep 1; echo rank$TIDE_GANG_RANK done')
        # Too big for one node and not allowed more: refused, saying why.
        status, err = c.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 8})
        assert status == 400 and "8 GPUs" in err["error"]["message"], err
        # A partial gang never starts: node-1 has only 2 free GPUs, so 4+4 must wait.
        blocker = c.submit(command=["sleep", "4"], gpus=2)
        c.wait_state(blocker["id"], "running")
        gang = c.submit(command=["sh", "-c", script], gpus=8, nodes=2)
        time_waiting = wait_until(lambda: (x := c.job(gang["id"]))["state"] == "pending" and
                                  "nodes" in (x.get("pending_reason") or "") and x, 10)
        assert time_waiting["gpus"] == [], time_waiting
        final = c.wait_final([blocker["id"], gang["id"]], 40)
        job = final[gang["id"]]
        assert job["state"] == "succeeded", job
        ranks = sorted(os.listdir(marks))
        assert ranks == ["rank0", "rank1"], ranks
        lines = [open(os.path.join(marks, r)).read().split() for r in ranks]
        assert [l[0] for l in lines] == ["0/2", "1/2"], lines
        assert lines[0][1] == lines[1][1] and set(lines[0][1].split(",")) == {"node-1", "node-2"}, lines
        assert all(len(l[2].split(",")) == 4 for l in lines), lines
        assert "rank0 done" in c.logs(gang["id"])
        status, err = c.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 100})
        assert status == 400 and "nodes" in err["error"]["message"], err


def test_a_failing_gang_member_stops_the_others_and_fails_the_job():
    with Cluster(agents=2, fake_gpus="2xA100:80GB") as c:
        script = 'if [ "$TIDE_GANG_RANK" = 1 ]; then sleep 1; exit 7; fi; sleep 60'
        gang = c.submit(command=["sh", "-c", script], gpus=4, nodes=2)
        done = c.wait_final([gang["id"]], 40)[gang["id"]]
        assert done["state"] == "failed" and done["exit_code"] == 7, done
        assert all(g["job_id"] is None for n in c.api("GET", "/v1/nodes")["nodes"] for g in n["gpus"])


def test_placement_and_order_policies_are_chosen_in_tide_yaml():
    def nodes_of_two_jobs(placement):
        cfg = f"scheduler:\n  placement: {placement}\n"
        with Cluster(agents=2, fake_gpus="4xH200:141GB", config=cfg) as c:
            ids = [c.submit(command=["sleep", "3"], gpus=1)["id"] for _ in range(2)]
            for i in ids:
                c.wait_state(i, "running")
            nodes = [c.job(i)["node"] for i in ids]
            for i in ids:
                c.api("DELETE", f"/v1/jobs/{i}")
            return nodes
    packed, spread = nodes_of_two_jobs("binpack"), nodes_of_two_jobs("spread")
    assert packed[0] == packed[1], packed        # binpack fills one node first
    assert spread[0] != spread[1], spread        # spread uses both
    # sjf: with one GPU free, the shorter of two waiting jobs goes first.
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config="scheduler:\n  policy: sjf\n") as c:
        blocker = c.submit(command=["sleep", "2"], gpus=1)
        c.wait_state(blocker["id"], "running")
        long = c.submit(command=["sleep", "1"], gpus=1, est_runtime=600)
        short = c.submit(command=["sleep", "1"], gpus=1, est_runtime=5)
        final = c.wait_final([blocker["id"], long["id"], short["id"]], 40)
        assert final[short["id"]]["start_time"] < final[long["id"]]["start_time"], final


def events_of(c, job_id, kind):
    return [e["message"] for e in c.api("GET", f"/v1/events?job={job_id}")["events"] if e["kind"] == kind]


def test_a_borrower_never_preempts_work_within_its_projects_quota():
    config = """
projects:
  - name: a
    quota_gpus: 1
  - name: b
    quota_gpus: 0
queues:
  - name: default
    preemptible: true
"""
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=config, kill_grace_s=1) as c:
        owner = c.submit(command=["sleep", "60"], gpus=1, project="a")["id"]
        c.wait_state(owner, "running")
        # Higher priority but beyond its quota: were it to preempt the
        # owner, the owner would take its quota back, and so on for ever.
        borrower = c.submit(command=["sleep", "60"], gpus=1, project="b", priority=50)["id"]
        time.sleep(5)
        assert c.job(owner)["state"] == "running" and c.job(owner)["attempt"] == 1, c.job(owner)
        assert c.job(borrower)["state"] == "pending", c.job(borrower)
        assert events_of(c, owner, "job_preempted") == []
        for i in (owner, borrower):
            c.api("DELETE", f"/v1/jobs/{i}")


def test_escalation_does_not_make_two_jobs_preempt_each_other():
    config = """
queues:
  - name: default
    max_wait_s: 2
    escalation: 100
    preemptible: true
"""
    with Cluster(agents=1, fake_gpus="1xT4:16GB", config=config, kill_grace_s=1) as c:
        low = c.submit(command=["sleep", "60"], gpus=1)["id"]
        c.wait_state(low, "running")
        high = c.submit(command=["sleep", "60"], gpus=1, priority=50)["id"]
        wait_until(lambda: c.job(high)["state"] == "running", 15, what="the higher job running")
        # low waits from its submit, escalated past high within seconds:
        # it must not preempt the job that preempted it back.
        time.sleep(8)
        assert len(events_of(c, low, "job_preempted")) == 1
        assert events_of(c, high, "job_preempted") == []
        assert c.job(high)["state"] == "running" and c.job(high)["attempt"] == 1, c.job(high)
        # its requeue says why, not the agent's "preempted (preempted)"
        requeued = events_of(c, low, "job_requeued")
        assert requeued == [f"attempt 1 preempted: preempted by job {high}"], requeued
        for i in (low, high):
            c.api("DELETE", f"/v1/jobs/{i}")


def test_a_gang_that_loses_a_node_starts_again_only_after_its_other_ranks_exit():
    with Cluster(agents=3, fake_gpus="2xH200:141GB", config="scheduler:\n  placement: binpack\n",
                 kill_grace_s=4) as c:
        timeline = os.path.join(c.dir, "timeline")
        # Each rank logs its start and exit with its node; a TERM takes 2 s.
        script = (f'L={timeline}; node=$(echo "$TIDE_GANG_NODES" | cut -d, -f$((TIDE_GANG_RANK + 1))); '
                  'echo "$(date +%s.%N) start $TIDE_ATTEMPT $node" >> $L; '
                  'trap \'sleep 2; echo "$(date +%s.%N) exit $TIDE_ATTEMPT $node" >> $L; exit 0\' TERM; '
                  'sleep 30 & wait $!')
        gang = c.submit(command=["sh", "-c", script], gpus=4, nodes=2)["id"]
        job = c.wait_state(gang, "running")
        wait_until(lambda: os.path.exists(timeline) and len(open(timeline).read().splitlines()) == 2, 10,
                   what="both ranks started")
        lost = [n for n in job["gang_nodes"] if n != job["node"]][0]
        survivor = job["node"]
        c.kill_agent(lost)
        wait_until(lambda: c.job(gang)["attempt"] >= 2 and c.job(gang)["state"] == "running", 30,
                   what="the second attempt running")
        lines = [l.split() for l in open(timeline).read().splitlines()]
        exits = [float(t) for t, what, att, node in lines if what == "exit" and att == "1" and node == survivor]
        starts = [float(t) for t, what, att, node in lines if what == "start" and att == "2"]
        assert exits and starts and max(exits) < min(starts), lines
        requeued = events_of(c, gang, "job_requeued")
        assert len(requeued) == 1 and "lost" in requeued[0], requeued
        c.api("DELETE", f"/v1/jobs/{gang}")
        c.wait_final([gang], 30)


def test_a_gang_is_preempted_for_gpus_on_any_of_its_nodes():
    with Cluster(agents=0, kill_grace_s=1) as c:
        c.start_agent("node-1", fake_gpus="2xH200:141GB")
        c.start_agent("node-2", fake_gpus="2xA100:80GB")
        wait_until(lambda: len(c.api("GET", "/v1/nodes")["nodes"]) == 2, 10, what="both nodes")
        gang = c.submit(command=["sleep", "60"], gpus=4, nodes=2, preemptible=True, priority=-10)["id"]
        job = c.wait_state(gang, "running")
        model = "H200*" if job["node"] == "node-2" else "A100*"  # the gang's second node only
        high = c.submit(command=["true"], gpus=1, priority=100, gpu_model=model)["id"]
        assert c.wait_final([high], 20)[high]["state"] == "succeeded"
        assert len(events_of(c, gang, "job_preempted")) == 1
        c.api("DELETE", f"/v1/jobs/{gang}")
        c.wait_final([gang], 30)


def test_a_gang_with_one_busy_rank_is_not_reclaimed_for_idling():
    with Cluster(agents=2, fake_gpus="2xH200:141GB", config=QUEUES, kill_grace_s=1) as c:
        # rank 0 coordinates and leaves its GPUs idle; rank 1 works
        script = ('if [ "$TIDE_GANG_RANK" = 1 ]; then echo "util=95 mem=1000" > "$TIDE_FAKE_GPU_FILE"; fi; '
                  'sleep 6; echo done')
        gang = c.submit(command=["sh", "-c", script], gpus=4, nodes=2, queue="notebooks")["id"]
        done = c.wait_final([gang], 40)[gang]
        assert done["state"] == "succeeded", done
        assert events_of(c, gang, "job_idle_warning") == []


if __name__ == "__main__":
    run_tests([
        test_unknown_queue_and_out_of_range_priority_are_refused,
        test_builtin_queues_exist_without_a_config,
        test_queue_cap_keeps_one_job_running_at_a_time,
        test_waiting_past_max_wait_escalates_priority,
        test_preempted_job_checkpoints_and_resumes_with_the_right_result,
        test_a_running_job_keeps_the_priority_it_started_with_across_a_server_restart,
        test_a_gang_job_preempts_on_each_node_its_shares_need_and_runs_across_them,
        test_non_preemptible_work_is_never_preempted,
        test_failed_attempt_is_retried_after_a_backoff,
        test_backfill_reserves_gpus_for_the_blocked_job,
        test_a_blocked_job_is_not_starved_when_running_jobs_give_no_runtime,
        test_dependencies_run_in_order_and_a_failed_one_fails_its_dependents,
        test_array_job_runs_each_index,
        test_idle_job_is_warned_then_reclaimed_and_a_busy_one_is_not,
        test_borrowed_gpus_are_taken_back_when_the_owner_needs_them,
        test_gang_job_spans_nodes_all_or_nothing,
        test_a_failing_gang_member_stops_the_others_and_fails_the_job,
        test_placement_and_order_policies_are_chosen_in_tide_yaml,
        test_a_borrower_never_preempts_work_within_its_projects_quota,
        test_escalation_does_not_make_two_jobs_preempt_each_other,
        test_a_gang_that_loses_a_node_starts_again_only_after_its_other_ranks_exit,
        test_a_gang_is_preempted_for_gpus_on_any_of_its_nodes,
        test_a_gang_with_one_busy_rank_is_not_reclaimed_for_idling,
    ])
