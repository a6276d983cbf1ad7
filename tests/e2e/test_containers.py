"""End to end: jobs with an image run in containers (podman) on real agents:
the command runs inside the image with its GPUs, env and checkpoint dir;
its output is the job's log; cancel and max_runtime stop the container and
leave none behind; a job without an image is still a bare process; agents
report the images they hold and placement prefers a node that holds the
job's image; an agent prewarms an image before registering; the start
events and /metrics count cache hits and misses; an agent registers and
runs containers while its runtime is still listing images, and a listing
that hangs stalls nothing; two clusters on one machine run the same job
ids in containers side by side, and a restarted agent removes only its own
leftovers.

No registry is needed: the test builds a tiny image from Debian's
busybox-static (`podman import` of a tarball) into a storage of its own
per agent, so what one agent holds the other does not. Without podman or
busybox this suite exits 77, which ctest reports as skipped."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, environment, run_tests, wait_until  # noqa: E402

SKIP = 77
IMAGE = "localhost/tide-test:1"
BUSYBOX = shutil.which("busybox")
PODMAN = shutil.which("podman")
TMP = tempfile.mkdtemp(prefix="tide-containers-")
ROOTFS_TAR = os.path.join(TMP, "rootfs.tar")
CONF = os.path.join(TMP, "containers.conf")

# Portable engine settings: runc works with cgroup v1, v2 and hybrid hosts
# (crun refuses hybrid), and explicit ulimits fit under a container's own
# hard limits (podman's defaults may exceed them).
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def storage_env(name):
    """Environment for podman with agent name's own image store."""
    root = os.path.join(TMP, "store-" + name)
    conf = os.path.join(TMP, f"storage-{name}.conf")
    if not os.path.exists(conf):
        with open(conf, "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\ngraphroot = "{root}/graph"\n'
                    f'runroot = "{root}/run"\n')
    return {"CONTAINERS_CONF": CONF, "CONTAINERS_STORAGE_CONF": conf}


def podman(name, *args, check=True):
    p = subprocess.run([PODMAN] + list(args), env=dict(os.environ, **storage_env(name)),
                       capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {p.stderr}")
    return p


def build_rootfs():
    """A busybox-static rootfs: sh, sleep, echo, cat, env, ls, test, kill, true."""
    root = os.path.join(TMP, "rootfs")
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "tmp"))
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    for tool in ("sh", "sleep", "echo", "cat", "env", "ls", "test", "kill", "pwd", "id", "true"):
        os.symlink("busybox", os.path.join(root, "bin", tool))
    subprocess.run(["tar", "-C", root, "-cf", ROOTFS_TAR, "."], check=True)
    with open(CONF, "w") as f:
        f.write(CONTAINERS_CONF)


def give_image(name, image=IMAGE):
    podman(name, "import", "--quiet", ROOTFS_TAR, image)


def containers(name):
    """Names of the containers in agent name's store (running or not)."""
    out = podman(name, "ps", "--all", "--format", "{{.Names}}").stdout
    return [line for line in out.split() if line]


def named(names, agent_name, job_id, attempt=1):
    """Whether names has agent agent_name's container for job_id.attempt:
    tide-<node>-<8 hex of its work dir>-<job>-<attempt>."""
    want = re.compile(rf"^tide-{re.escape(agent_name)}-[0-9a-f]{{8}}-{job_id}-{attempt}$")
    return any(want.match(n) for n in names)


def events(c, job_id):
    return c.api("GET", f"/v1/events?job={job_id}")["events"]


def metric(c, name):
    m = re.search(rf"^{name} (\d+)$", c.api("GET", "/metrics"), re.M)
    return int(m.group(1)) if m else None


def images_reported(c, name):
    """Waits until agent name has listed its images (it registers before
    the list is in: agent_images.h) and heartbeated since, so the server
    knows them."""
    wait_until(lambda: re.search(r" holds \d+ image", c.log(f"agent-{name}")), 60,
               what=f"agent {name}'s images listed")
    seen = c.node(name)["last_heartbeat"]
    wait_until(lambda: c.node(name)["last_heartbeat"] > seen, 30, what=f"a heartbeat of {name}")


def agent(c, name, extra=()):
    c.start_agent(name, extra=extra, env=storage_env(name))
    images_reported(c, name)


def test_a_containerised_job_runs_in_its_image_with_gpus_env_and_checkpoint_dir():
    give_image("c1")
    with Cluster(agents=0) as c:
        agent(c, "c1")
        # the host has python3 and /usr; the image has neither
        script = ("echo greeting=$GREETING cuda=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES; "
                  "test -e /usr || echo only-the-image; echo pwd=$(pwd); "
                  "echo saved > $TIDE_CHECKPOINT_DIR/state; echo to-stderr >&2; "
                  "echo conf=$CONTAINERS_CONF; cat /proc/self/status")
        # CONTAINERS_CONF is the container's, not the runtime's (root's):
        # given to podman it would name a config it cannot read
        j = c.submit(image=IMAGE, command=["sh", "-c", script], gpus=2,
                     env={"GREETING": "hello", "CONTAINERS_CONF": "/nowhere/containers.conf"})
        final = c.wait_final([j["id"]], timeout=90)[j["id"]]
        assert final["state"] == "succeeded", (final, c.logs(j["id"]))
        out = c.logs(j["id"])
        assert "greeting=hello cuda=0,1 nv=0,1" in out, out
        assert "only-the-image" in out and "to-stderr" in out, out
        assert "conf=/nowhere/containers.conf" in out, out
        assert re.search(r"NoNewPrivs:\s+1", out), out  # no setuid file gains anything
        assert re.search(r"pwd=/.*/jobs/%d" % j["id"], out), out
        with open(os.path.join(c.data, "checkpoints", str(j["id"]), "state")) as f:
            assert f.read() == "saved\n"
        starting = [e for e in events(c, j["id"]) if e["kind"] == "job_starting"]
        assert "image cached" in starting[0]["message"], starting
        assert metric(c, "tide_image_cache_hits_total") == 1
        wait_until(lambda: not containers("c1"), 20, what="the container removed")
        # tide submit: --image and --mount (read-only here), run in the job directory
        data = os.path.join(TMP, "data")
        os.makedirs(data, exist_ok=True)
        with open(os.path.join(data, "input"), "w") as f:
            f.write("from-the-host\n")
        out = c.cli("submit", "--image", IMAGE, "--mount", f"{data}:/data:ro", "--wait", "--",
                    "sh", "-c", "cat /data/input; echo x > /data/new || echo read-only; pwd")
        assert out.returncode == 0, (out.stdout, out.stderr)
        m = c.jobs()[0]
        assert m["spec"]["mounts"] == [f"{data}:/data:ro"] and "workdir" not in m["spec"], m
        log = c.logs(m["id"])
        assert "from-the-host" in log and "read-only" in log, log
        assert not os.path.exists(os.path.join(data, "new"))
        assert f"/jobs/{m['id']}" in log, log
        # the same agent still runs bare processes: the host's python3
        b = c.submit(command=[sys.executable, "-c", "import sys; print('bare', sys.version_info[0])"],
                     gpus=1)
        final = c.wait_final([b["id"]])[b["id"]]
        assert final["state"] == "succeeded" and "bare 3" in c.logs(b["id"]), c.logs(b["id"])
        assert "image" not in [e for e in events(c, b["id"]) if e["kind"] == "job_starting"][0]["message"]


def test_cancel_and_max_runtime_stop_the_container_and_leave_none():
    give_image("c2")
    with Cluster(agents=0, kill_grace_s=3) as c:
        agent(c, "c2")
        j = c.submit(image=IMAGE, command=["sh", "-c", "echo up; sleep 300"], gpus=1)
        c.wait_state(j["id"], "running", timeout=60)
        wait_until(lambda: named(containers("c2"), "c2", j["id"]), 30, what="the container running")
        wait_until(lambda: "up" in c.logs(j["id"]), 30, what="its output")
        c.api("DELETE", f"/v1/jobs/{j['id']}")
        final = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert final["state"] == "cancelled", final
        wait_until(lambda: not named(containers("c2"), "c2", j["id"]), 30, what="the container gone")
        # a command that ignores SIGTERM is killed after the grace, container and all
        t = c.submit(image=IMAGE, max_runtime=2, gpus=1,
                     command=["sh", "-c", "trap '' TERM; echo stubborn; while true; do sleep 1; done"])
        final = c.wait_final([t["id"]], timeout=60)[t["id"]]
        assert final["state"] == "timeout", final
        assert "stubborn" in c.logs(t["id"])
        wait_until(lambda: not containers("c2"), 30, what="no container left")
        # an agent killed outright takes its tasks with it, container and
        # all: its task guard removes the container, whose parent is the
        # runtime's monitor, not the task
        k = c.submit(image=IMAGE, command=["sh", "-c", "sleep 300"], gpus=1)
        c.wait_state(k["id"], "running", timeout=60)
        wait_until(lambda: named(containers("c2"), "c2", k["id"]), 30, what="its container")
        c.kill_agent("c2")
        wait_until(lambda: not named(containers("c2"), "c2", k["id"]), 30,
                   what="the guard removing the container of the agent that died")


def test_placement_prefers_the_node_holding_the_image_and_counts_misses():
    give_image("p2")
    with Cluster(agents=0) as c:
        agent(c, "p1")  # no images; first in every strategy's order
        agent(c, "p2")
        ids = [c.submit(image=IMAGE, command=["sh", "-c", "sleep 2"], gpus=1)["id"] for _ in range(3)]
        final = c.wait_final(ids, timeout=90)
        for i in ids:
            assert final[i]["state"] == "succeeded", final[i]
            assert [e for e in events(c, i) if e["kind"] == "job_starting"][0]["node"] == "p2"
        assert metric(c, "tide_image_cache_hits_total") == 3
        # 4 GPUs on p2 are enough for all three at once: a preference, not a
        # wait. With p2 full, the job goes to p1, which must pull the image
        # (here from nowhere: it fails, and says so)
        hold = c.submit(image=IMAGE, command=["sh", "-c", "sleep 60"], gpus=4)
        c.wait_state(hold["id"], "running", timeout=60)
        miss = c.submit(image=IMAGE, command=["true"], gpus=1)
        final = c.wait_final([miss["id"]], timeout=90)[miss["id"]]
        starting = [e for e in events(c, miss["id"]) if e["kind"] == "job_starting"][0]
        assert starting["node"] == "p1" and "image not cached" in starting["message"], starting
        assert final["state"] == "failed", final
        assert final["reason"].startswith("start failed: podman exit 125: could not create"), final
        assert metric(c, "tide_image_cache_misses_total") == 1
        failures = re.search(r'^tide_job_failures_total\{reason="start_failed"\} (\d+)$',
                             c.api("GET", "/metrics"), re.M)
        assert failures and int(failures.group(1)) == 1, failures
        c.api("DELETE", f"/v1/jobs/{hold['id']}")
        c.wait_final([hold["id"]], timeout=60)


def test_an_agent_prewarms_its_image_before_registering():
    give_image("src", "localhost/tide-prewarm:1")
    archive = os.path.join(TMP, "prewarm.tar")
    podman("src", "save", "--quiet", "-o", archive, "localhost/tide-prewarm:1")
    assert "localhost/tide-prewarm:1" not in podman("w1", "images", "--format",
                                                     "{{.Repository}}:{{.Tag}}").stdout
    with Cluster(agents=0) as c:
        agent(c, "w1", extra=["--prewarm-image", "docker-archive:" + archive])
        # registered means prewarmed: the image is in its store already
        held = podman("w1", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout
        assert "localhost/tide-prewarm:1" in held, held
        assert "prewarm docker-archive:" in c.log("agent-w1"), c.log("agent-w1")
        j = c.submit(image="localhost/tide-prewarm:1", command=["echo", "warm"], gpus=1)
        final = c.wait_final([j["id"]], timeout=60)[j["id"]]
        assert final["state"] == "succeeded" and "warm" in c.logs(j["id"]), final
        starting = [e for e in events(c, j["id"]) if e["kind"] == "job_starting"][0]
        assert "image cached" in starting["message"], starting


def test_a_pool_prewarms_its_images_on_every_new_node():
    give_image("srcpool", "localhost/tide-pool:1")
    archive = os.path.join(TMP, "pool.tar")
    podman("srcpool", "save", "--quiet", "-o", archive, "localhost/tide-pool:1")
    config = "\n".join([
        "pools:", "  - name: warm", "    gpu: H200", "    gpus_per_node: 2",
        "    gpu_memory_mib: 144384", "    provider: local", "    min_nodes: 1",
        "    max_nodes: 1", "    boot_time_s: 3", "    pull_time_s: 5", "    boot_timeout_s: 60",
        "    images:", f"      - docker-archive:{archive}", ""])
    # the local provider's agents inherit the server's environment: their store
    with environment(storage_env("pool")):
        with Cluster(agents=0, config=config) as c:
            p = c.api("GET", "/v1/pools")["pools"][0]
            assert p["images"] == [f"docker-archive:{archive}"] and p["pull_time_s"] == 5, p
            node = wait_until(lambda: next((n for n in c.api("GET", "/v1/nodes")["nodes"]
                                            if n["pool"] == "warm" and n["state"] == "ready"), None),
                              60, 0.25, what="the pool's node ready")
            held = podman("pool", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout
            assert "localhost/tide-pool:1" in held, held
            j = c.submit(image="localhost/tide-pool:1", command=["echo", "pooled"], gpus=1)
            final = c.wait_final([j["id"]], timeout=60)[j["id"]]
            assert final["state"] == "succeeded" and "pooled" in c.logs(j["id"]), final
            starting = [e for e in events(c, j["id"]) if e["kind"] == "job_starting"][0]
            assert starting["node"] == node["name"] and "image cached" in starting["message"], starting


def test_an_image_with_a_transport_is_refused_and_loads_nothing():
    # a transport makes the runtime (root) read the node's files and store
    # the image under the archive's own name, where other jobs find it
    give_image("planter", "localhost/tide-planted:1")
    archive = os.path.join(TMP, "planted.tar")
    podman("planter", "save", "--quiet", "-o", archive, "localhost/tide-planted:1")
    with Cluster(agents=0) as c:
        agent(c, "t1")
        for image in (f"docker-archive:{archive}", f"oci-archive:{archive}",
                      "containers-storage:localhost/tide-planted:1",
                      "docker://localhost/tide-planted:1", f"dir:{TMP}"):
            status, out = c.request("POST", "/v1/jobs",
                                    {"image": image, "command": ["true"], "gpus": 1})
            assert status == 400 and out["error"]["field"] == "image", (image, status, out)
            assert "a registry reference is expected" in out["error"]["message"], out
        out = c.cli("submit", "--image", f"docker-archive:{archive}", "--", "true")
        assert out.returncode != 0 and "registry reference" in out.stderr, (out.stdout, out.stderr)
        assert c.jobs() == []
        seen = c.node("t1")["last_heartbeat"]
        wait_until(lambda: c.node("t1")["last_heartbeat"] > seen, 30, what="a heartbeat")
        held = podman("t1", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout
        assert "tide-planted" not in held, held


def test_an_agent_that_dies_takes_its_containers_and_no_attempt_overlaps():
    # one store for both agents, so `podman ps` sees both attempts
    give_image("dies")
    env = storage_env("dies")
    with Cluster(agents=0) as c:
        c.start_agent("d1", env=env)
        script = ("while true; do echo attempt=$TIDE_ATTEMPT >> $TIDE_CHECKPOINT_DIR/ticks; "
                  "sleep 0.2; done")
        j = c.submit(image=IMAGE, command=["sh", "-c", script], gpus=1)
        ticks = os.path.join(c.data, "checkpoints", str(j["id"]), "ticks")
        wait_until(lambda: os.path.exists(ticks), 60, what="attempt 1 writing")
        assert named(containers("dies"), "d1", j["id"], 1), containers("dies")
        c.kill_agent("d1")  # and not restarted
        died = time.monotonic()
        c.start_agent("d2", env=env)
        wait_until(lambda: not named(containers("dies"), "d1", j["id"], 1), 20,
                   what="attempt 1's container removed after its agent died")
        assert time.monotonic() - died < 20
        wait_until(lambda: c.node("d1")["state"] == "lost" and c.job(j["id"])["attempt"] == 2 and
                   c.job(j["id"])["state"] == "running", 60, what="d1 lost, the job running on d2")
        assert c.job(j["id"])["node"] == "d2", c.job(j["id"])
        wait_until(lambda: "attempt=2" in open(ticks).read(), 60, what="attempt 2 writing")
        time.sleep(1)
        lines = open(ticks).read().split()
        # every line of attempt 1 was written before attempt 2's first
        assert "attempt=1" not in lines[lines.index("attempt=2"):], lines
        assert named(containers("dies"), "d2", j["id"], 2), containers("dies")
        c.api("DELETE", f"/v1/jobs/{j['id']}")
        c.wait_final([j["id"]], timeout=60)
        wait_until(lambda: not containers("dies"), 30, what="no container left")


def containers_of(store, c, agent_name):
    """Names of the containers agent agent_name of cluster c made (label
    tide.agent = its work dir) in store's storage."""
    work = os.path.realpath(os.path.join(c.dir, "agents", agent_name))
    out = podman(store, "ps", "--all", "--filter", f"label=tide.agent={work}",
                 "--format", "{{.Names}}").stdout
    return [line for line in out.split() if line]


def test_two_clusters_on_one_machine_run_the_same_job_ids_in_containers_side_by_side():
    # one podman store, two servers, an agent named n1 in each: the same node
    # name, job id and attempt, so only the agent's work dir tells them apart
    give_image("shared")
    env = storage_env("shared")
    with Cluster(agents=0) as a, Cluster(agents=0) as b:
        a.start_agent("n1", env=env)
        b.start_agent("n1", env=env)
        ja = a.submit(image=IMAGE, command=["sh", "-c", "echo up-a; sleep 300"], gpus=1)
        jb = b.submit(image=IMAGE, command=["sh", "-c", "echo up-b; sleep 300"], gpus=1)
        assert ja["id"] == jb["id"], (ja, jb)
        for c, j, word in ((a, ja, "up-a"), (b, jb, "up-b")):
            wait_until(lambda: word in c.logs(j["id"]) or c.job(j["id"])["state"] not in
                       ("queued", "starting", "running"), 60, what=f"{word} in its log")
            assert c.job(j["id"])["state"] == "running", (c.job(j["id"]), c.logs(j["id"]))
        names_a, names_b = containers_of("shared", a, "n1"), containers_of("shared", b, "n1")
        assert named(names_a, "n1", ja["id"]) and named(names_b, "n1", jb["id"]), (names_a, names_b)
        assert not set(names_a) & set(names_b), (names_a, names_b)
        # a's agent dies: its guard removes its container, not b's
        a.kill_agent("n1")
        wait_until(lambda: not set(names_a) & set(containers("shared")), 30,
                   what="a's guard removing a's container")
        assert set(names_b) <= set(containers("shared")), containers("shared")
        # a leftover the guard could not remove (its removal failed, or the
        # guard died too), made here with the label a's agent gives its
        # containers: a's restarted agent removes its own, not b's. (Killing
        # the agent and its guard to leave one is not reliable: a runtime
        # client killed as it attaches sometimes takes its container along.)
        work_a = os.path.realpath(os.path.join(a.dir, "agents", "n1"))
        podman("shared", "run", "--detach", "--name", "tide-n1-leftover", "--label",
               f"tide.agent={work_a}", IMAGE, "sleep", "300")
        assert containers_of("shared", a, "n1") == ["tide-n1-leftover"]
        a.start_agent("n1", env=env)
        wait_until(lambda: "tide-n1-leftover" not in containers("shared"), 30,
                   what="a's restarted agent removing its leftover")
        assert set(names_b) <= set(containers("shared")), containers("shared")
        assert b.job(jb["id"])["state"] == "running", b.job(jb["id"])
        for c, j in ((a, ja), (b, jb)):
            c.api("DELETE", f"/v1/jobs/{j['id']}")
            c.wait_final([j["id"]], timeout=60)
        wait_until(lambda: not containers_of("shared", b, "n1"), 30, what="b's container gone")


HELD_RUNTIME = """#!/bin/sh
# podman whose `images` waits (at most 120 s) while {dir}/hold exists,
# noting in {dir}/listings when each listing starts and ends
if [ "$1" = images ]; then
  echo start >> {dir}/listings
  i=0
  while [ -e {dir}/hold ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done
  {podman} "$@"
  rc=$?
  echo end >> {dir}/listings
  exit $rc
fi
exec {podman} "$@"
"""


def test_an_agent_runs_containers_while_its_runtime_still_lists_images():
    give_image("held")
    d = os.path.join(TMP, "held")
    os.makedirs(d)
    runtime = os.path.join(d, "podman-held")
    with open(runtime, "w") as f:
        f.write(HELD_RUNTIME.format(dir=d, podman=PODMAN))
    os.chmod(runtime, 0o755)
    hold = os.path.join(d, "hold")

    def listings():
        try:
            with open(os.path.join(d, "listings")) as f:
                words = f.read().split()
        except FileNotFoundError:
            return 0, 0
        return words.count("start"), words.count("end")

    open(hold, "w").close()
    try:
        with Cluster(agents=0) as c:
            # queued before the agent is there: placed as soon as it registers
            first = c.submit(image=IMAGE, command=["echo", "early"], gpus=1)
            c.start_agent("held", extra=["--container-runtime", runtime], env=storage_env("held"))
            final = c.wait_final([first["id"]], timeout=90)[first["id"]]
            assert final["state"] == "succeeded" and "early" in c.logs(first["id"]), \
                (final, c.logs(first["id"]))
            # it ran before the agent's first listing (which starts 1 s
            # after the agent) was in: that one starts and stays held
            wait_until(lambda: listings() == (1, 0), 30, what="the first listing held")
            starting = [e for e in events(c, first["id"]) if e["kind"] == "job_starting"][0]
            assert "image not cached" in starting["message"], starting
            # let the listing finish: the next heartbeat tells the server
            os.unlink(hold)
            images_reported(c, "held")
            second = c.submit(image=IMAGE, command=["echo", "second"], gpus=1)
            final = c.wait_final([second["id"]], timeout=90)[second["id"]]
            assert final["state"] == "succeeded", (final, c.logs(second["id"]))
            starting = [e for e in events(c, second["id"]) if e["kind"] == "job_starting"][0]
            assert ", image cached" in starting["message"], starting
            # the refresh after a containerised start hangs now: the agent
            # goes on heartbeating and starting tasks all the same
            open(hold, "w").close()
            third = c.submit(image=IMAGE, command=["echo", "third"], gpus=1)
            c.wait_final([third["id"]], timeout=90)
            wait_until(lambda: listings()[0] > listings()[1], 30, what="a listing held")
            held_now = listings()
            bare = c.submit(command=["echo", "bare"], gpus=1)
            final = c.wait_final([bare["id"]], timeout=60)[bare["id"]]
            assert final["state"] == "succeeded", final
            assert listings() == held_now, (listings(), held_now)
            os.unlink(hold)
            wait_until(lambda: listings()[0] == listings()[1], 60, what="the listing done")
    finally:
        if os.path.exists(hold):
            os.unlink(hold)


def cleanup():
    for name in os.listdir(TMP):
        if name.startswith("store-"):
            agent_name = name[len("store-"):]
            for ctr in containers(agent_name):
                podman(agent_name, "rm", "--force", "--time=0", ctr, check=False)
            podman(agent_name, "system", "reset", "--force", check=False)
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    if not PODMAN or not BUSYBOX:
        print(f"skipped: needs podman ({PODMAN}) and busybox-static ({BUSYBOX})")
        sys.exit(SKIP)
    build_rootfs()
    try:
        run_tests([
            test_a_containerised_job_runs_in_its_image_with_gpus_env_and_checkpoint_dir,
            test_cancel_and_max_runtime_stop_the_container_and_leave_none,
            test_placement_prefers_the_node_holding_the_image_and_counts_misses,
            test_an_agent_prewarms_its_image_before_registering,
            test_a_pool_prewarms_its_images_on_every_new_node,
            test_an_image_with_a_transport_is_refused_and_loads_nothing,
            test_an_agent_that_dies_takes_its_containers_and_no_attempt_overlaps,
            test_two_clusters_on_one_machine_run_the_same_job_ids_in_containers_side_by_side,
            test_an_agent_runs_containers_while_its_runtime_still_lists_images,
        ])
    finally:
        cleanup()
