#!/usr/bin/env python3
"""make bench, where the end-to-end row's time goes: runs bench/e2e.py under
`perf record` (its own process tree only: system calls, and CPU samples every
250 us of CPU) and prints, per job, the system calls and the CPU profile of
the server, of the agents, and of their tasks (an agent's vfork child until
its exec, then `sleep`). System-call counts hardly change between runs, unlike
timings on a shared machine, so they show what a change saved.
Needs perf (Debian: linux-perf) and the rights to trace (root).
Usage: e2e_profile.py TIDE_BIN [--top N] [e2e.py's options]"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

SAMPLE_NS = 250000  # one CPU sample per 250 us of CPU


def syscall_names():
    names = {}
    try:
        with open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h") as f:
            for line in f:
                m = re.match(r"#define __NR_(\w+) (\d+)", line)
                if m:
                    names[int(m.group(2))] = m.group(1)
    except OSError:
        pass
    return names


def parse(script):
    """{pid: {"comms": set, "calls": Counter(nr), "cpu": Counter((sym, dso))}}"""
    procs = collections.defaultdict(lambda: {"comms": set(), "calls": collections.Counter(),
                                             "cpu": collections.Counter()})
    line_re = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/\d+\s+(?P<event>[\w-]+(?::[\w-]+)?):\s*(?P<rest>.*)$")
    for line in script.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        p = procs[int(m.group("pid"))]
        p["comms"].add(m.group("comm"))
        rest = m.group("rest")
        if m.group("event").startswith("raw_syscalls"):
            nr = re.search(r"NR (\d+)", rest)
            if nr:
                p["calls"][int(nr.group(1))] += 1
        else:
            s = re.match(r"[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", rest)
            if s:
                p["cpu"][(s.group(1).split("+0x")[0], os.path.basename(s.group(2)))] += 1
    return procs


def classify(procs):
    """The server (the process with MHD threads), the tasks (the agents'
    children that became `sleep`), the image listings (children that became
    podman or docker) and the agents (the other tide processes: each agent
    and its task guard)."""
    server = [p for p, v in procs.items() if "MHD-connection" in v["comms"]]
    tasks = [p for p, v in procs.items() if p not in server and "sleep" in v["comms"]]
    listings = [p for p, v in procs.items() if v["comms"] & {"podman", "docker"}]
    agents = [p for p, v in procs.items() if "tide" in v["comms"] and
              p not in server and p not in tasks and p not in listings]
    return server, agents, tasks, listings


def show(title, pids, procs, jobs, top, names):
    calls, cpu, dsos = collections.Counter(), collections.Counter(), collections.Counter()
    for p in pids:
        calls.update(procs[p]["calls"])
        cpu.update(procs[p]["cpu"])
    for (_, dso), n in cpu.items():
        dsos[dso] += n
    ncpu = sum(cpu.values())
    print(f"  {title} ({len(pids)} process{'es' if len(pids) != 1 else ''}): "
          f"{sum(calls.values()) / jobs:.1f} system calls and "
          f"{ncpu * SAMPLE_NS / 1e6 / jobs:.2f} ms of CPU per job")
    print("    calls per job: " + ", ".join(f"{names.get(k, k)} {v / jobs:.1f}"
                                           for k, v in calls.most_common(top)))
    if not ncpu:
        return
    print("    CPU by library: " + ", ".join(f"{k} {100 * v / ncpu:.0f}%"
                                            for k, v in dsos.most_common(6)))
    for (sym, dso), v in cpu.most_common(top):
        print(f"    {100 * v / ncpu:5.1f}%  {sym} ({dso})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=1000)
    args, rest = ap.parse_known_args()
    tide = os.path.abspath(args.tide)
    here = os.path.dirname(os.path.abspath(__file__))
    fd, data = tempfile.mkstemp(prefix="tide-e2e-", suffix=".perf", dir="/var/tmp")
    os.close(fd)
    try:
        rec = subprocess.run(
            ["perf", "record", "-q", "-o", data, "-e", "raw_syscalls:sys_enter",
             "-e", "cpu-clock", "-c", str(SAMPLE_NS), "--", sys.executable,
             os.path.join(here, "e2e.py"), tide, "--latency", "0", "--jobs", str(args.jobs)] + rest,
            capture_output=True, text=True)
        if rec.returncode != 0:
            sys.exit(f"perf record failed: {rec.stderr.strip()[-400:]}")
        for line in rec.stdout.splitlines():
            if re.search(r"all started|CPU per job", line):
                print(line)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,event,ip,sym,dso,trace"],
                                capture_output=True, text=True).stdout
    finally:
        os.unlink(data)
    procs = parse(script)
    server, agents, tasks, listings = classify(procs)
    names = syscall_names()
    for title, pids in (("server", server), ("agents", agents), ("tasks, fork to exit", tasks),
                        ("the agents' image listings (once idle)", listings)):
        show(title, pids, procs, args.jobs, args.top, names)


if __name__ == "__main__":
    main()
