"""End to end: the web dashboard (GET /) in headless Chromium against a real
server with fake-GPU agents and a local pool. Chromium runs the page's
scripts, then dumps the DOM (`--dump-dom`), which the tests read back; a
screenshot is kept in TIDE_ARTIFACT_DIR (default: ./test-artifacts).
Exits 77 (skipped) when no chromium is installed."""
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = os.path.abspath(os.environ.get("TIDE_ARTIFACT_DIR", "test-artifacts"))
PWNED = "data-pwned"
XSS_NAME = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"

CONFIG = """
queues:
  - name: default
  - name: batch
    max_running_jobs: 1
  - name: pooled
    pools: [elastic]
projects:
  - name: vision
    quota_gpus: 2
    budget_daily: 1.00
  - name: nlp
    quota_gpus: 2
pools:
  - name: elastic
    gpu: H200
    gpus_per_node: 2
    gpu_memory_mib: 144384
    provider: local
    min_nodes: 1
    max_nodes: 1
    boot_timeout_s: 60
    price_per_node_hour: 3600.00
    billing: on_demand
"""

# A job that makes its fake GPUs report 73 % utilisation and 5000 MiB used.
BUSY = ["sh", "-c", 'echo "util=73 mem=5000" > "$TIDE_FAKE_GPU_FILE"; sleep 600']


# ---- a small DOM reader for what chromium dumps ----------------------
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        for c in self.children:
            if isinstance(c, Element):
                yield c
                yield from c.walk()

    def find_all(self, tag=None, **attrs):
        return [e for e in self.walk() if (tag is None or e.tag == tag)
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def find(self, tag=None, **attrs):
        found = self.find_all(tag, **attrs)
        return found[0] if found else None

    def by_id(self, ident):
        return next((e for e in self.walk() if e.attrs.get("id") == ident), None)


class DomReader(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        if tag not in VOID:
            self.cur = e

    def handle_endtag(self, tag):
        e = self.cur
        while e is not self.root and e.tag != tag:
            e = e.parent
        if e is not self.root:
            self.cur = e.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(text):
    r = DomReader()
    r.feed(text)
    r.close()
    return r.root


# ---- chromium ---------------------------------------------------------
def chromium(url, *extra, budget_ms=6000):
    """Runs headless chromium on url until the page's timers and fetches have
    had budget_ms of virtual time; returns its stdout."""
    profile = tempfile.mkdtemp(prefix="tide-chromium-")
    try:
        p = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
             "--enable-logging=stderr", "--v=0",
             f"--virtual-time-budget={budget_ms}", *extra, url],
            capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"chromium exited {p.returncode}: {p.stderr[-3000:]}")
        # The page's console: no script error, nothing the CSP had to refuse.
        bad = [line for line in p.stderr.splitlines() if ":CONSOLE" in line and any(
            m in line for m in ("Uncaught", "Content Security Policy", "Refused to"))]
        assert not bad, "\n".join(bad)
        return p.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump(c, token, refresh=1):
    return parse(chromium(f"{c.url}/#token={token}&refresh={refresh}", "--dump-dom"))


def cells(row):
    return [td.text().strip() for td in row.find_all("td")]


# ---- the cluster ------------------------------------------------------
def start_cluster():
    c = Cluster(agents=1, fake_gpus="2xH200:141GB", config=CONFIG)
    c.__enter__()
    try:
        wait_until(lambda: c.api("GET", "/v1/pools")["pools"][0]["nodes"]["ready"] == 1, 60, 0.25,
                   what="the pool's node ready")
        jobs = {}
        jobs["busy"] = c.submit(name="busy-nlp", project="nlp", gpus=1, command=BUSY)["id"]
        jobs["pooled"] = c.submit(name="pooled-vision", project="vision", queue="pooled", gpus=1,
                                  command=["sleep", "600"])["id"]
        jobs["batch1"] = c.submit(name="batch-first", project="nlp", queue="batch", gpus=0,
                                  command=["sleep", "600"])["id"]
        c.wait_state(jobs["batch1"], "running")
        jobs["batch2"] = c.submit(name="batch-waits", project="vision", queue="batch", gpus=0,
                                  command=["true"])["id"]
        jobs["xss"] = c.submit(name=XSS_NAME, project="nlp", queue="batch", gpus=0,
                               command=["true"])["id"]
        for k in ("busy", "pooled"):
            c.wait_state(jobs[k], "running")
        busy_job = c.job(jobs["busy"])
        wait_until(lambda: any(g["utilization_pct"] == 73 for g in c.node(busy_job["node"])["gpus"]),
                   30, 0.2, what="the fake GPU's utilisation in a heartbeat")
        # The vision budget (1.00 a day at 0.50 a GPU-second) alerts within seconds.
        wait_until(lambda: any(e["kind"] == "budget_alert" for e in c.api("GET", "/v1/events")["events"]),
                   30, 0.25, what="a budget alert")
        c.jobs_by_key = jobs
        return c
    except BaseException:
        c.__exit__(*sys.exc_info())
        raise


CLUSTER = None


def cluster():
    global CLUSTER
    if CLUSTER is None:
        CLUSTER = start_cluster()
    return CLUSTER


# ---- tests ------------------------------------------------------------
def test_static_files_need_no_token_and_forbid_external_loads():
    c = cluster()
    status, body = c.request("GET", "/", token="")
    assert status == 200 and "<title>tide</title>" in body, (status, body[:200])
    for path, ctype in (("/", "text/html"), ("/static/app.js", "text/javascript"),
                        ("/static/style.css", "text/css"), ("/static/favicon.svg", "image/svg+xml")):
        with urllib.request.urlopen(c.url + path, timeout=10) as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith(ctype), (path, r.headers)
            csp = r.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "script-src 'self'" in csp, csp
            assert "connect-src 'self'" in csp, csp
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert len(r.read()) > 0
    for path in ("/static/nope.js", "/static/../admin.token", "/static/", "/static/index.html/x"):
        status, body = c.request("GET", path, token="")
        assert status == 404, (path, status, body)
    # The API itself still needs the token.
    status, _ = c.request("GET", "/v1/jobs", token="")
    assert status == 401, status


def test_dashboard_shows_jobs_nodes_pools_projects_and_events():
    c = cluster()
    jobs = c.jobs_by_key
    dom = dump(c, c.admin)
    body = dom.find("body")
    assert body.attrs.get("data-view") == "dashboard", body.attrs
    assert int(body.attrs.get("data-refreshed", "0")) >= 2, body.attrs  # it refreshed itself
    assert not dom.by_id("global-error").text().strip(), dom.by_id("global-error").text()

    # Queue: every job, with state; the waiting one with its reason.
    rows = {int(r.attrs["data-job"]): r for r in dom.by_id("jobs").find_all("tr")
            if "data-job" in r.attrs}
    assert set(jobs.values()) <= set(rows), (jobs, sorted(rows))
    api_jobs = {j["id"]: j for j in c.jobs()}
    for jid, row in rows.items():
        assert row.attrs["data-state"] == api_jobs[jid]["state"], (jid, row.attrs, api_jobs[jid])
    waiting = api_jobs[jobs["batch2"]]
    assert waiting["state"] == "pending", waiting
    reason = rows[jobs["batch2"]].find("td", **{"class": "reason"}).text()
    assert reason and reason == (waiting.get("pending_reason") or waiting["reason"]), (reason, waiting)
    eta = rows[jobs["batch2"]].find("td", **{"class": "eta"}).text().strip()
    if waiting.get("eta") and waiting["eta"].get("in_s") is not None:
        assert eta.startswith("in "), (eta, waiting["eta"])
    else:
        assert eta == "-", eta
    assert cells(rows[jobs["busy"]])[1] == "busy-nlp", cells(rows[jobs["busy"]])

    # Nodes: both nodes, every GPU, with the telemetry the agents report.
    nodes = c.api("GET", "/v1/nodes")["nodes"]
    for n in nodes:
        for g in n["gpus"]:
            row = dom.find("tr", data_node=n["name"], data_gpu=str(g["index"]))
            assert row is not None, (n["name"], g["index"])
            util = row.find("span", **{"class": "val"})
            assert util.text().endswith("%"), util.text()
            assert row.find("td", **{"class": "num temp"}).text().endswith("°C"), cells(row)
            assert row.find("td", **{"class": "num power"}).text().endswith("W"), cells(row)
    busy = api_jobs[jobs["busy"]]
    shown = [dom.find("tr", data_node=busy["node"], data_gpu=str(i)) for i in busy["gpus"]]
    assert all(r.find("td", **{"class": "util"}).text().strip() == "73%" for r in shown), \
        [cells(r) for r in shown]
    assert all(f"#{busy['id']}" in cells(r) for r in shown), [cells(r) for r in shown]

    # Pools: the pool with its ready node, cost so far and idle cost; its scale-up event.
    pool_row = dom.find("tr", data_pool="elastic")
    assert pool_row is not None
    assert "1 ready" in pool_row.text(), cells(pool_row)
    cost = float(pool_row.find("td", **{"class": "num cost"}).text())
    assert cost > 0, cells(pool_row)
    float(pool_row.find("td", **{"class": "num idle-cost"}).text())
    assert "pool_scale_up" in dom.by_id("scaling").text(), dom.by_id("scaling").text()

    # GET /v1/projects carries the budgets: vision's daily cap and this day's spend.
    budgets = {b["project"]: b for b in c.api("GET", "/v1/projects")["budgets"]}
    assert set(budgets) == {"vision"}, budgets
    v = budgets["vision"]
    assert v["monthly"] is None and v["daily"]["cap_micros"] == 1000000, v
    assert v["daily"]["cap"] == "1.000000" and v["daily"]["spent_micros"] > 0, v
    assert v["daily"]["alerted_pct"] >= 50 and v["hard_cap"] is False, v

    # Projects: both, vision's daily budget spent against its cap and its alert.
    vision = dom.find("tr", data_project="vision")
    assert vision is not None and dom.find("tr", data_project="nlp") is not None
    daily = vision.find("div", data_period="daily")
    assert daily is not None and "/ 1.00" in daily.text(), vision.text()
    assert "budget_alert" in dom.by_id("alerts").text() and "vision" in dom.by_id("alerts").text()

    # Events: the newest ones, among them this job's start.
    kinds = [r.attrs["data-kind"] for r in dom.by_id("events").find_all("tr") if "data-kind" in r.attrs]
    assert kinds and len(kinds) <= 50, kinds
    assert any(f"#{jobs['busy']}" in cells(r) for r in dom.by_id("events").find_all("tr")), kinds

    # Each queue's counts, as GET /v1/queues has them.
    for q in c.api("GET", "/v1/queues")["queues"]:
        chip = dom.find("span", data_queue=q["name"])
        assert chip is not None and f"{q['pending_jobs']} pending" in chip.text(), (q, chip and chip.text())
    assert "max 1 jobs" in dom.find("span", data_queue="batch").text()

    # The summary: the queue's counts.
    assert dom.find("span", data_stat="pending") is not None


def test_a_job_name_with_markup_is_shown_as_text():
    c = cluster()
    dom = dump(c, c.admin)
    row = dom.find("tr", data_job=str(c.jobs_by_key["xss"]))
    assert row is not None
    assert cells(row)[1] == XSS_NAME, cells(row)
    assert not row.find_all("img"), "the job name became an element"
    assert PWNED not in dom.find("body").attrs, dom.find("body").attrs
    assert all(i.attrs.get("src") != "x" for i in dom.find_all("img"))


def test_a_project_token_sees_only_its_projects():
    c = cluster()
    tok = c.api("POST", "/v1/tokens", {"name": "nlp-team", "projects": ["nlp"]}, expect=201)["token"]
    assert c.api("GET", "/v1/projects", token=tok)["budgets"] == []  # vision's is not theirs
    dom = dump(c, tok)
    assert dom.find("body").attrs.get("data-view") == "dashboard"
    shown = {int(r.attrs["data-job"]) for r in dom.by_id("jobs").find_all("tr") if "data-job" in r.attrs}
    jobs = c.jobs_by_key
    assert {jobs["busy"], jobs["batch1"], jobs["xss"]} <= shown, shown
    assert jobs["pooled"] not in shown and jobs["batch2"] not in shown, shown
    assert dom.find("tr", data_project="nlp") is not None
    assert dom.find("tr", data_project="vision") is None
    assert "pooled-vision" not in dom.find("body").text()


def test_a_refused_token_goes_back_to_the_login_with_the_reason():
    c = cluster()
    dom = dump(c, "not-a-token", refresh=0)
    body = dom.find("body")
    assert body.attrs.get("data-view") == "login", body.attrs
    assert "401" in dom.by_id("login-error").text(), dom.by_id("login-error").text()
    assert dom.by_id("dash").attrs.get("hidden") is not None
    # The join token is refused every dashboard call (403): back to the login too.
    dom = dump(c, c.join, refresh=0)
    assert dom.find("body").attrs.get("data-view") == "login"
    assert "403" in dom.by_id("login-error").text(), dom.by_id("login-error").text()
    dom = parse(chromium(f"{c.url}/", "--dump-dom", budget_ms=2000))
    assert dom.find("body").attrs.get("data-view") == "login"
    assert dom.by_id("login-error").text() == ""


def test_screenshot_is_kept_as_an_artifact():
    c = cluster()
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, "dashboard.png")
    if os.path.exists(path):
        os.unlink(path)
    chromium(f"{c.url}/#token={c.admin}&refresh=0", f"--screenshot={path}", "--window-size=1400,1000",
             "--hide-scrollbars")
    with open(path, "rb") as f:
        head = f.read(8)
    assert head == b"\x89PNG\r\n\x1a\n", head
    assert os.path.getsize(path) > 20000, os.path.getsize(path)
    print(f"  screenshot: {path}", flush=True)


def test_the_events_panel_shows_the_newest_events_of_a_long_history():
    c = cluster()
    # 1000 more events (one per job submitted): with the earlier ones, more than one page of GET /v1/events.
    c.api("POST", "/v1/jobs", {"name": "many", "project": "nlp", "queue": "batch", "gpus": 0,
                               "command": ["true"], "array": 1000}, expect=201)
    newest = c.api("GET", "/v1/events?limit=100000")["events"][-1]["id"]
    dom = dump(c, c.admin, refresh=0)
    shown = [int(r.attrs["data-event"]) for r in dom.by_id("events").find_all("tr")
             if "data-event" in r.attrs]
    assert len(shown) == 50, len(shown)
    assert shown[0] >= newest and shown == sorted(shown, reverse=True), (newest, shown[:3])


def test_a_mig_gpu_counts_once_and_a_gang_shows_all_its_gpus():
    # the dashboard counted a MIG GPU's instances as GPUs (8 for one A100
    # of 7 slices) and a running gang job's first node's GPUs alone
    c = cluster()
    c.start_agent("mig-1", fake_gpus="1xA100:80GB:mig=1g.10gb*7")
    c.start_agent("gang-1", fake_gpus="2xL4:24GB")
    c.start_agent("gang-2", fake_gpus="2xL4:24GB")
    gang = c.submit(name="gang", project="nlp", gpus=4, nodes=2, gpu_model="L4",
                    command=["sleep", "600"])
    c.wait_state(gang["id"], "running")
    dom = dump(c, c.admin)
    card = dom.find("div", data_node="mig-1")
    assert card is not None and "0/1 GPUs busy" in card.text(), card.text() if card else None
    row = next(r for r in dom.by_id("jobs").find_all("tr") if r.attrs.get("data-job") == str(gang["id"]))
    assert cells(row)[5] == "4", cells(row)
    assert "gang-1" in cells(row)[6] and "gang-2" in cells(row)[6], cells(row)
    c.api("DELETE", f"/v1/jobs/{gang['id']}")


if __name__ == "__main__":
    if not CHROMIUM:
        print("chromium not installed (scripts/deps.sh installs it): skipped")
        sys.exit(77)
    try:
        run_tests([test_static_files_need_no_token_and_forbid_external_loads,
                   test_dashboard_shows_jobs_nodes_pools_projects_and_events,
                   test_a_job_name_with_markup_is_shown_as_text,
                   test_a_project_token_sees_only_its_projects,
                   test_a_refused_token_goes_back_to_the_login_with_the_reason,
                   test_screenshot_is_kept_as_an_artifact,
                   test_the_events_panel_shows_the_newest_events_of_a_long_history,
                   test_a_mig_gpu_counts_once_and_a_gang_shows_all_its_gpus])
    finally:
        if CLUSTER is not None:
            CLUSTER.__exit__(None, None, None)
