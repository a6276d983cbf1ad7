"""End to end: jobs sharing one GPU by memory (with the limit enforced on
fake GPUs) and MIG placement on fake instances."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

# Each share records its GPU and limit, then runs long enough to overlap.
SHARE = 'echo "gpu=$CUDA_VISIBLE_DEVICES limit=$TIDE_GPU_MEMORY_LIMIT_MIB mps=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"; sleep 3'


def test_four_jobs_share_one_gpu_and_an_exclusive_job_waits():
    with Cluster(agents=1, fake_gpus="1xT4:16GB") as c:
        shares = [c.submit(command=["sh", "-c", SHARE], gpus=1, gpu_memory=4000) for _ in range(4)]
        whole = c.submit(command=["sh", "-c", "echo whole on $CUDA_VISIBLE_DEVICES"], gpus=1)
        wait_until(lambda: all(c.job(j["id"])["state"] == "running" for j in shares), 20,
                   what="four shares running together")
        assert c.job(whole["id"])["state"] == "pending", c.job(whole["id"])
        gpu = c.api("GET", "/v1/nodes")["nodes"][0]["gpus"][0]
        assert gpu["shared_jobs"] == 4 and gpu["shared_memory_mib"] == 16000, gpu
        assert gpu["free"] is False and gpu["job_id"] is None, gpu
        table = c.cli("nodes", "--gpus", check=True).stdout
        assert "4 shares 16000M" in table, table

        done = c.wait_final([j["id"] for j in shares] + [whole["id"]], timeout=60)
        assert all(done[j["id"]]["state"] == "succeeded" for j in shares), done
        # The exclusive job waited for every share: placed only after the last
        # one's end was recorded (the server's own times, so no race with
        # the polling here: it may start and end between two of its reads).
        last_share_end = max(done[j["id"]]["end_time"] for j in shares)
        assert done[whole["id"]]["start_time"] >= last_share_end, done
        for j in shares:
            log = c.logs(j["id"])
            assert "gpu=0 limit=4000 mps=0=4000MB" in str(log), log
        assert done[whole["id"]]["state"] == "succeeded", done


def test_share_over_its_memory_limit_is_killed():
    with Cluster(agents=1, fake_gpus="1xT4:16GB") as c:
        greedy = c.submit(command=["sh", "-c", 'echo "mem=6000" > "$TIDE_FAKE_GPU_FILE"; sleep 30'],
                          gpus=1, gpu_memory=4000)
        polite = c.submit(command=["sh", "-c", 'echo "mem=3000" > "$TIDE_FAKE_GPU_FILE"; sleep 2'],
                          gpus=1, gpu_memory=4000)
        done = c.wait_final([greedy["id"], polite["id"]], timeout=40)
        assert done[greedy["id"]]["state"] == "failed", done
        assert done[greedy["id"]]["reason"] == "gpu memory over limit", done
        assert done[polite["id"]]["state"] == "succeeded", done


def test_mig_jobs_land_on_distinct_instances_and_a_third_waits():
    with Cluster(agents=1, fake_gpus="1xA100:80GB:mig=3g.40gb*2") as c:
        gpus = c.api("GET", "/v1/nodes")["nodes"][0]["gpus"]
        assert [g.get("mig_profile") for g in gpus] == [None, "3g.40gb", "3g.40gb"], gpus
        assert gpus[0]["mig_mode"] is True and gpus[0]["free"] is False, gpus
        cmd = ["sh", "-c", 'echo "visible=$CUDA_VISIBLE_DEVICES"; sleep 3']
        jobs = [c.submit(command=cmd, mig="3g.40gb") for _ in range(3)]
        # a whole-GPU job never lands on a GPU in MIG mode: with no other GPU, it is refused
        status, err = c.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 1})
        assert status == 400 and err["error"]["field"] == "gpus", err
        assert "MIG mode" in err["error"]["message"], err
        wait_until(lambda: sum(c.job(j["id"])["state"] == "running" for j in jobs) == 2, 20,
                   what="two MIG jobs running")
        assert c.job(jobs[2]["id"])["state"] == "pending", c.job(jobs[2]["id"])
        assert "MIG 3g.40gb" in c.job(jobs[2]["id"]).get("pending_reason", ""), c.job(jobs[2]["id"])
        table = c.cli("nodes", "--gpus", check=True).stdout
        assert "MIG mode" in table and "0:1" in table, table
        done = c.wait_final([j["id"] for j in jobs], timeout=60)
        seen = []
        for j in jobs:
            assert done[j["id"]]["state"] == "succeeded", done
            line = [x for x in str(c.logs(j["id"])).split("\\n") if "visible=" in x]
            seen.append(str(line))
        uuids = set()
        for s in seen:
            assert "visible=MIG-" in s, seen
            uuids.add(s.split("visible=")[1][:40])
        assert len(uuids) == 2, seen  # the third reused a freed instance


if __name__ == "__main__":
    run_tests([
        test_four_jobs_share_one_gpu_and_an_exclusive_job_waits,
        test_share_over_its_memory_limit_is_killed,
        test_mig_jobs_land_on_distinct_instances_and_a_third_waits,
    ])
