#!/usr/bin/env python3
"""Where the server's CPU goes per POST /v1/jobs (one job per request, wrk,
keep-alive connections, no nodes): for each run, jobs/s and the server's
CPU per job split into user and kernel time, and the scheduling passes'
share (from /metrics); with --callgrind, the server under valgrind's
callgrind for a fixed stretch, and instructions per request of the HTTP
threads (libmicrohttpd's connection thread, on_request and below), of the
scheduler thread, and of the big pieces of a submit (JSON parse, spec
check, the inserts, the commit, libmicrohttpd's pool clearing). Instruction
counts do not depend on how busy the machine is, so they compare builds
on a shared machine where CPU times wander by 20%; callgrind counts a
`rep stos` byte by byte, so memset weighs more there than in time. Not
run by make bench (minutes under valgrind). Never fails on speed.
Usage: submit_cpu.py TIDE_BIN [--seconds S] [--reps N] [--conns 1,8]
                     [--callgrind [--cg-seconds S]]"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SPEC = '{"command":["true"],"gpus":1,"name":"bench"}'


def user_sys_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def metric(text, name):
    m = re.search(r"^" + name + r" ([\d.e+-]+)", text, re.M)
    return float(m.group(1)) if m else 0


def wrk_script(c):
    path = os.path.join(c.dir, "post.lua")
    with open(path, "w") as f:
        f.write(f'wrk.method = "POST"\nwrk.body = \'{SPEC}\'\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.headers["Authorization"] = "Bearer {c.token}"\n')
    return path


def wrk(c, conns, seconds):
    out = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "-s", wrk_script(c),
                          c.url + "/v1/jobs"], capture_output=True, text=True).stdout
    rate = re.search(r"Requests/sec:\s*([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return (float(rate.group(1)) if rate else 0.0), (int(bad.group(1)) if bad else 0)


def cpu_rows(tide, conns_list, seconds, reps):
    for rep in range(reps):
        with BenchCluster(tide, "tide-bench-submitcpu-") as c:
            c.start_server()
            pid = c.procs["server"].pid
            for conns in conns_list:
                before = c.call("GET", "/metrics", raw=True)
                u0, s0 = user_sys_s(pid)
                rate, bad = wrk(c, conns, seconds)
                u1, s1 = user_sys_s(pid)
                after = c.call("GET", "/metrics", raw=True)
                made = max(1.0, metric(after, "tide_jobs_submitted_total") -
                           metric(before, "tide_jobs_submitted_total"))
                pass_s = (metric(after, "tide_scheduler_pass_seconds_sum") -
                          metric(before, "tide_scheduler_pass_seconds_sum"))
                print(f"  run {rep + 1}, {conns} connection{'s' if conns > 1 else ' '}: "
                      f"{rate:,.0f} jobs/s{f' ({bad} not 201!)' if bad else ''}; server CPU "
                      f"{(u1 - u0 + s1 - s0) / made * 1e6:.0f} us per job (user "
                      f"{(u1 - u0) / made * 1e6:.0f}, kernel {(s1 - s0) / made * 1e6:.0f}; "
                      f"passes {pass_s / made * 1e6:.0f})", flush=True)


# Functions whose inclusive instructions are shown per request (a name
# matched at the end of callgrind_annotate's "file:function").
PIECES = [("  on_request (tide's handler)", r":on_request$"),
          ("    JSON parse (json_loadb)", r":json_loadb$"),
          ("    spec check (api_jobs_check_spec)", r":api_jobs_check_spec$"),
          ("    auth_check", r":auth_check$"),
          ("    group commit (commit_batch)", r":commit_batch$"),
          ("      jobs insert", r":store_jobs_insert_many$"),
          ("      events insert", r":store_events_add_many$"),
          ("      COMMIT", r":store_commit$"),
          ("      spec text (json_write_compact)", r":json_write_compact$"),
          ("  memset (mostly libmicrohttpd clearing its pool)", r":__memset_\w+$")]


def callgrind_rows(tide, conns, seconds):
    if not shutil.which("valgrind"):
        print("  valgrind not installed; skipping")
        return
    outdir = tempfile.mkdtemp(prefix="tide-bench-cg-")
    with BenchCluster(tide, "tide-bench-submitcpu-") as c:
        log = open(os.path.join(c.dir, "server.log"), "ab")
        p = subprocess.Popen(["valgrind", "--tool=callgrind", "--separate-threads=no",
                              f"--callgrind-out-file={outdir}/cg.%p", c.tide, "server",
                              "--listen", f"127.0.0.1:{c.port}", "--data", c.data],
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        c.procs["server"] = p
        token = os.path.join(c.data, "admin.token")
        deadline = time.monotonic() + 120
        while not os.path.exists(token) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)
        c.token = open(token).read().strip()
        wrk(c, conns, 2)  # warm: statements prepared, caches filled
        before = c.call("GET", "/metrics", raw=True)
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True)
        wrk(c, conns, seconds)
        subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True)
        after = c.call("GET", "/metrics", raw=True)
        made = metric(after, "tide_jobs_submitted_total") - metric(before, "tide_jobs_submitted_total")
    dumps = sorted(glob.glob(os.path.join(outdir, "cg.*.1")))
    if not dumps or made < 1:
        print("  no callgrind dump or no job made; skipping")
        return
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dumps[-1]],
                          capture_output=True, text=True).stdout
    total = re.search(r"([\d,]+) .*PROGRAM TOTALS", text)
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([\d. %]+\)\s+(\S+)", line)
        if m:
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    if not total:
        print("  callgrind_annotate printed no totals; skipping")
        return
    all_n = int(total.group(1).replace(",", ""))
    sched = max([n for n, name in rows if re.search(r":sched_thread$", name)] or [0])
    print(f"  callgrind, {conns} connections for {seconds} s: {made:.0f} jobs, one request "
          f"each; instructions per job:")
    print(f"    {'in all':52s} {all_n / made:9,.0f}")
    print(f"    {'the scheduler thread (passes)':52s} {sched / made:9,.0f}")
    print(f"    {'the rest (HTTP threads: a request)':52s} {(all_n - sched) / made:9,.0f}")
    for label, pattern in PIECES:
        hits = [n for n, name in rows if re.search(pattern, name)]
        if hits:
            print(f"    {label:52s} {max(hits) / made:9,.0f}")
    shutil.rmtree(outdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conns", default="1,8")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--cg-seconds", type=int, default=8)
    args = ap.parse_args()
    if not shutil.which("wrk"):
        print("  wrk not installed; skipping")
        return 0
    conns = [int(x) for x in args.conns.split(",")]
    print("POST /v1/jobs, one job per request, no nodes (each run a new server):")
    cpu_rows(args.tide, conns, args.seconds, args.reps)
    if args.callgrind:
        callgrind_rows(args.tide, max(conns), args.cg_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
