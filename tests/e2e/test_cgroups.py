"""End to end: each task runs in its own cgroup with the job's memory limit;
a job the kernel's OOM killer ends fails with reason `oom`, which the
failure metric counts and retries treat like any other failure.

Needs cgroups the agent can manage (a delegated v2 subtree with the memory
controller, or a writable v1 memory hierarchy, as root). Where the agent
finds none this suite says so and exits with 77, which ctest reports as
skipped (SKIP_RETURN_CODE in CMakeLists.txt)."""
import os
import re
import signal
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

SKIP = 77
PY = sys.executable or "python3"
GREEDY = [PY, "-c", "b = bytearray(300 << 20); print(len(b))"]
MODEST = [PY, "-c", "import os; b = bytearray(32 << 20); "
          "print('limit', os.environ.get('TIDE_MEMORY_LIMIT_MIB'), len(b)); "
          "print(open('/proc/self/cgroup').read())"]


def agent_cgroups(c, name="node-1"):
    """(version, dir, group name prefix) the agent logged, or None with the
    agent's own words on why there are none."""
    log = wait_until(lambda: (t := c.log(f"agent-{name}")) and "cgroup" in t and t, 10,
                     what="the agent's cgroup line")
    m = re.search(r"cgroup (v[12]) at (.+?): tasks get", log)
    if not m:
        line = next((l for l in log.splitlines() if "cgroup" in l), "")
        return None, line
    return (m.group(1), m.group(2), f"tide-{c.agents[name].pid}-"), None


def leftover_groups(cg):
    _, directory, prefix = cg
    try:
        return sorted(d for d in os.listdir(directory) if d.startswith(prefix))
    except FileNotFoundError:
        return []


def remove_groups(cg):
    """Removes the agent's task groups even when a test failed halfway."""
    for d in leftover_groups(cg):
        path = os.path.join(cg[1], d)
        for _ in range(50):
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


class CgroupCluster(Cluster):
    """A one-agent cluster that remembers the agent's cgroup setup and
    removes its groups on the way out, whatever happened."""

    def __enter__(self):
        super().__enter__()
        self.cg, why = agent_cgroups(self)
        assert self.cg, f"the agent found no usable cgroups this time: {why}"
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            return super().__exit__(exc_type, exc, tb)
        finally:
            remove_groups(self.cg)


def oom_failures(c):
    m = re.search(r'^tide_job_failures_total\{reason="oom"\} (\d+)$', c.api("GET", "/metrics"),
                  re.M)
    return int(m.group(1)) if m else None


def test_job_over_its_memory_limit_fails_with_reason_oom_and_is_counted():
    with CgroupCluster(agents=1) as c:
        assert oom_failures(c) == 0
        j = c.submit(command=GREEDY, gpus=0, memory=64)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "failed", done
        assert done["reason"] == "oom", done
        assert "314572800" not in str(c.logs(j["id"])), c.logs(j["id"])
        assert oom_failures(c) == 1, c.api("GET", "/metrics")
        wait_until(lambda: not leftover_groups(c.cg), 10, what="the task's cgroup removed")


def test_job_within_its_limit_succeeds_in_its_own_group():
    with CgroupCluster(agents=1) as c:
        j = c.submit(command=MODEST, gpus=0, memory=256)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "succeeded", (done, c.logs(j["id"]))
        log = str(c.logs(j["id"]))
        assert f"limit 256 {32 << 20}" in log, log
        assert f"/{c.cg[2]}{j['id']}-1" in log, (c.cg, log)
        assert oom_failures(c) == 0
        wait_until(lambda: not leftover_groups(c.cg), 10, what="the task's cgroup removed")


def test_job_without_memory_gets_no_limit_claimed():
    with CgroupCluster(agents=1) as c:
        j = c.submit(command=MODEST, gpus=0)
        done = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert done["state"] == "succeeded", (done, c.logs(j["id"]))
        assert f"limit None {32 << 20}" in str(c.logs(j["id"])), c.logs(j["id"])


def test_oom_is_retried_like_other_failures():
    with CgroupCluster(agents=1) as c:
        j = c.submit(command=GREEDY, gpus=0, memory=64, retries=1)
        done = c.wait_final([j["id"]], timeout=90)[j["id"]]
        assert done["state"] == "failed", done
        assert done["reason"] == "oom", done
        assert done["attempt"] == 2, done
        assert oom_failures(c) == 2, c.api("GET", "/metrics")
        wait_until(lambda: not leftover_groups(c.cg), 10, what="the tasks' cgroups removed")


def device_probe(dev_dir, n):
    """A job that tries to open dev_dir/nvidia0..n-1 and prints, per node,
    its index and how the open went: "open", or the errno's name."""
    code = ("import errno, os\n"
            f"for i in range({n}):\n"
            "    try:\n"
            f"        os.close(os.open('{dev_dir}/nvidia%d' % i, os.O_RDWR)); print(i, 'open')\n"
            "    except OSError as e:\n"
            "        print(i, errno.errorcode[e.errno])\n")
    return [PY, "-c", code]


def test_a_bare_job_cannot_open_the_gpus_it_was_not_given():
    # CUDA_VISIBLE_DEVICES only steers CUDA: the kernel refuses a task the
    # device nodes (195:minor) of the node's GPUs it was not given, and lets
    # it reach its own, where no driver answers here: ENXIO, not EPERM.
    with CgroupCluster(agents=1) as c:
        if "GPUs not given are closed" not in c.log("agent-node-1"):
            print("  (skipped: no GPU device isolation here: "
                  f"{[l for l in c.log('agent-node-1').splitlines() if 'cgroup' in l]})")
            return
        dev = os.path.join(c.dir, "dev")
        os.makedirs(dev)
        for i in range(4):
            os.mknod(os.path.join(dev, f"nvidia{i}"), 0o666 | stat.S_IFCHR, os.makedev(195, i))
        jobs = [c.submit(command=device_probe(dev, 4), gpus=g) for g in (1, 2, 0)]
        final = c.wait_final([j["id"] for j in jobs], timeout=60)
        for j in jobs:
            done = final[j["id"]]
            assert done["state"] == "succeeded", (done, c.logs(j["id"]))
            seen = dict(line.split() for line in c.logs(j["id"]).split("\n") if line.strip())
            want = {str(i): "ENXIO" if i in done["gpus"] else "EPERM" for i in range(4)}
            assert seen == want, (done["gpus"], seen)
        wait_until(lambda: not leftover_groups(c.cg), 10, what="the tasks' cgroups removed")


if __name__ == "__main__":
    with Cluster(agents=1) as probe:
        found, why = agent_cgroups(probe)
    if not found:
        print(f"SKIP: the agent found no usable cgroups, so limits and OOM kills cannot be "
              f"tested here: {why}", flush=True)
        sys.exit(SKIP)
    print(f"cgroup {found[0]} at {found[1]}", flush=True)
    run_tests([
        test_job_over_its_memory_limit_fails_with_reason_oom_and_is_counted,
        test_job_within_its_limit_succeeds_in_its_own_group,
        test_job_without_memory_gets_no_limit_claimed,
        test_oom_is_retried_like_other_failures,
        test_a_bare_job_cannot_open_the_gpus_it_was_not_given,
    ])
