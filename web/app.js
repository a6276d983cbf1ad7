/*
 * tide's web dashboard: signs in with a token kept in sessionStorage, then
 * polls the REST API (jobs, nodes, pools, projects, usage, queues, events)
 * every few seconds and redraws its panels. API data only ever reaches the
 * page as text nodes (never innerHTML), so names cannot inject markup.
 * The URL fragment may carry `#token=T&refresh=S` once; it is moved into
 * sessionStorage and removed from the address bar.
 */
'use strict';

(function () {
  const TOKEN_KEY = 'tide.token';
  const REFRESH_KEY = 'tide.refresh';
  const JOB_LIMIT = 200;      /* newest jobs fetched per refresh (after filters) */
  const EVENTS_KEPT = 50;     /* events shown in the events panel */
  const SCALING_KEPT = 12;
  const ALERTS_KEPT = 12;
  const SCALING_KINDS = new Set(['pool_scale_up', 'node_draining', 'node_released', 'node_failed',
    'provider_failed', 'provider_orphan', 'node_interrupted', 'node_adopting']);

  const $ = (id) => document.getElementById(id);
  let timer = null;
  let generation = 0;
  let inFlight = false;
  let again = false;
  let events = [];           /* newest last, at most EVENTS_KEPT */
  let scaling = [];
  let alerts = [];
  let eventCursor = null;    /* id of the newest event seen: next call asks since it */

  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /* ---- small DOM helpers: text only ------------------------------ */
  function h(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'title') e.title = String(v);
      else if (k.startsWith('data-')) e.setAttribute(k, String(v));
      else if (k === 'style-width') e.style.width = v;
      else throw new Error('h: unsupported property ' + k);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function fill(tbody, rows, emptyText, columns) {
    tbody.replaceChildren(...(rows.length ? rows
      : [h('tr', {class: 'empty'}, h('td', {}, emptyText))]));
    if (!rows.length) tbody.firstChild.firstChild.colSpan = columns;
  }

  function show(el, yes) { el.hidden = !yes; }

  /* ---- formatting ------------------------------------------------ */
  function duration(s) {
    if (s === null || s === undefined || !isFinite(s)) return '-';
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + (s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
    return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
  }

  function clock(unix) {
    if (unix === null || unix === undefined) return '-';
    const d = new Date(unix * 1000);
    const pad = (n) => String(n).padStart(2, '0');
    const today = new Date();
    const time = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    if (d.toDateString() === today.toDateString()) return time;
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + time;
  }

  function money(micros) {
    if (micros === null || micros === undefined) return '-';
    return (micros / 1e6).toFixed(2);
  }

  function hours(v) {
    if (v === null || v === undefined) return '-';
    return v < 10 ? v.toFixed(3) : v.toFixed(1);
  }

  function num(v, digits) {
    if (v === null || v === undefined || v === '') return '-';
    return digits === undefined ? String(v) : Number(v).toFixed(digits);
  }

  function pct(used, total) {
    return total > 0 ? Math.max(0, Math.min(100, (100 * used) / total)) : 0;
  }

  function bar(percent, cls) {
    return h('span', {class: 'bar ' + (cls || '')},
      h('span', {class: 'fill', 'style-width': percent.toFixed(1) + '%'}));
  }

  function level(percent) {
    return percent >= 90 ? 'hot' : percent >= 60 ? 'warm' : 'cool';
  }

  /* ---- token and API --------------------------------------------- */
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  async function api(path) {
    const r = await fetch(path, {headers: {Authorization: 'Bearer ' + token()}, cache: 'no-store'});
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok) {
      const msg = body && body.error && body.error.message ? body.error.message : r.statusText;
      throw new HttpError(r.status, msg);
    }
    /* a proxy's login page answers 200 too: not data to draw */
    if (body === null || typeof body !== 'object') throw new HttpError(r.status, 'the answer is not JSON');
    return body;
  }

  function takeFragment() {
    if (!location.hash || location.hash.length < 2) return;
    const params = new URLSearchParams(location.hash.slice(1));
    if (params.get('token')) sessionStorage.setItem(TOKEN_KEY, params.get('token'));
    const r = params.get('refresh');
    if (r !== null && /^\d+$/.test(r)) sessionStorage.setItem(REFRESH_KEY, r);
    history.replaceState(null, '', location.pathname + location.search);
  }

  function refreshSeconds() {
    const v = parseInt(sessionStorage.getItem(REFRESH_KEY) || '5', 10);
    /* past about 24 days setTimeout fires at once: an hour at most */
    return isFinite(v) && v >= 0 ? Math.min(v, 3600) : 5;
  }

  /* ---- panels ---------------------------------------------------- */
  function panelError(panel, err) {
    const p = panel.querySelector('.panel-error');
    p.textContent = err ? 'Could not load: ' + err.message : '';
    show(p, !!err);
  }

  function renderJobs(data) {
    const jobs = data.jobs || [];
    const now = Date.now() / 1000;
    const rows = jobs.map((j) => {
      const pending = j.state === 'pending';
      const reason = pending ? (j.pending_reason || j.reason || '') : (j.reason || '');
      let eta = '-';
      let etaTitle = null;
      if (pending && j.eta && typeof j.eta === 'object') {
        eta = j.eta.in_s === null || j.eta.in_s === undefined ? '-' : 'in ' + duration(j.eta.in_s);
        etaTitle = 'starts ' + clock(j.eta.start_time) + (j.eta.basis ? ' (' + j.eta.basis + ')' : '');
      }
      const since = pending ? j.submit_time : (j.start_time || j.submit_time);
      const until = j.end_time || now;
      /* the spec's count: a gang's gpus list only names its first node's */
      const gpus = j.spec && j.spec.gpus !== undefined ? j.spec.gpus
        : (Array.isArray(j.gpus) ? j.gpus.length : null);
      return h('tr', {'data-job': j.id, 'data-state': j.state},
        h('td', {class: 'num'}, j.id),
        h('td', {class: 'name', title: j.name}, j.name || ''),
        h('td', {}, j.project),
        h('td', {}, j.queue),
        h('td', {}, h('span', {class: 'badge ' + j.state}, j.state)),
        h('td', {class: 'num'}, num(gpus)),
        h('td', {}, j.gang_nodes && j.gang_nodes.length ? j.gang_nodes.join(', ') : (j.node || '')),
        h('td', {class: 'reason', title: reason}, reason),
        h('td', {class: 'eta', title: etaTitle, 'data-basis': pending && j.eta ? j.eta.basis : null},
          eta, pending && j.eta && j.eta.basis ? h('small', {}, ' ' + j.eta.basis) : null),
        h('td', {class: 'num'}, since ? duration(until - since) : '-'));
    });
    fill($('jobs').tBodies[0], rows, 'No jobs match.', 10);
    $('jobs-note').textContent = jobs.length >= JOB_LIMIT
      ? 'Showing the newest ' + JOB_LIMIT + ' jobs; filter to narrow.'
      : jobs.length + ' job' + (jobs.length === 1 ? '' : 's') + '.';
  }

  function gpuRow(node, g) {
    const util = g.utilization_pct;
    const memPct = pct(g.memory_used_mib, g.memory_total_mib);
    return h('tr', {'data-node': node.name, 'data-gpu': g.index},
      h('td', {class: 'num'}, g.index),
      h('td', {}, g.name + (g.mig_profile ? ' ' + g.mig_profile : '')),
      h('td', {class: 'util'}, bar(util || 0, level(util || 0)),
        h('span', {class: 'val', 'data-util': util}, num(util) + '%')),
      h('td', {class: 'mem'}, bar(memPct, level(memPct)),
        h('span', {class: 'val'}, (g.memory_used_mib / 1024).toFixed(1) + ' / ' +
          (g.memory_total_mib / 1024).toFixed(0) + ' GiB')),
      h('td', {class: 'num temp', 'data-temp': g.temperature_c}, num(g.temperature_c) + ' °C'),
      h('td', {class: 'num power', 'data-power': g.power_w}, num(g.power_w) + ' W'),
      h('td', {class: 'num'}, (g.job_id === null || g.job_id === undefined ? '' : '#' + g.job_id) +
        (g.healthy === false ? ' fault: ' + (g.fault || '?') : '')));
  }

  /* The server's counts: a MIG GPU's instances are one GPU, and a GPU held
   * by shares is in use though no one job holds it whole. */
  function gpusTotal(n) { return n.gpus_total !== undefined ? n.gpus_total : (n.gpus || []).length; }
  function gpusUsed(n) {
    return n.gpus_allocated !== undefined ? n.gpus_allocated
      : (n.gpus || []).filter((g) => g.job_id !== null && g.job_id !== undefined).length;
  }

  function renderNodes(data) {
    /* released pool nodes stay on record for ever: not on the dashboard */
    const nodes = (data.nodes || []).filter((n) => n.state !== 'released');
    const now = Date.now() / 1000;
    const cards = nodes.map((n) => {
      const gpus = n.gpus || [];
      const meta = [n.pool ? 'pool ' + n.pool : 'static', n.cpus + ' CPUs',
        Math.round((n.memory_mib || 0) / 1024) + ' GiB', n.driver,
        'heartbeat ' + (n.last_heartbeat ? duration(now - n.last_heartbeat) + ' ago' : '-'),
        n.drain_reason ? 'drained: ' + n.drain_reason : null];
      return h('div', {class: 'node', 'data-node': n.name},
        h('div', {class: 'node-head'},
          h('strong', {}, n.name), ' ', h('span', {class: 'badge ' + n.state}, n.state),
          h('span', {class: 'muted'}, ' ' + gpusUsed(n) + '/' + gpusTotal(n) + ' GPUs busy · ' +
            meta.filter(Boolean).join(' · '))),
        gpus.length ? h('table', {class: 'gpus'},
          h('thead', {}, h('tr', {}, h('th', {class: 'num'}, 'GPU'), h('th', {}, 'model'),
            h('th', {}, 'utilisation'), h('th', {}, 'memory'), h('th', {class: 'num'}, 'temp'),
            h('th', {class: 'num'}, 'power'), h('th', {class: 'num'}, 'job'))),
          h('tbody', {}, gpus.map((g) => gpuRow(n, g)))) : h('p', {class: 'muted'}, 'no GPUs'));
    });
    $('nodes').replaceChildren(...(cards.length ? cards : [h('p', {class: 'muted'}, 'No nodes.')]));
    const ready = nodes.filter((n) => n.state === 'ready');
    const total = ready.reduce((a, n) => a + gpusTotal(n), 0);
    const used = ready.reduce((a, n) => a + gpusUsed(n), 0);
    return {nodes: nodes.length, ready: nodes.filter((n) => n.state === 'ready').length, total, used};
  }

  function renderPools(data) {
    const pools = data.pools || [];
    const rows = pools.map((p) => {
      const states = Object.entries(p.nodes || {}).filter(([, v]) => v > 0)
        .map(([k, v]) => v + ' ' + k);
      return h('tr', {'data-pool': p.name},
        h('td', {}, h('strong', {}, p.name), h('div', {class: 'muted'},
          p.gpus_per_node + '×' + p.gpu + ' · ' + p.provider + ' · ' + p.billing + ' · ' +
          p.min_nodes + '-' + p.max_nodes + ' nodes')),
        h('td', {class: 'nowrap'}, states.length ? states.join(', ') : 'none',
          p.held_back ? h('div', {class: 'muted', title: p.held_back}, 'held back: ' + p.held_back) : null),
        h('td', {class: 'num'}, num(p.pending_jobs)),
        h('td', {class: 'num cost'}, money(p.cost_micros)),
        h('td', {class: 'num idle-cost'}, money(p.idle_cost_micros)),
        h('td', {class: 'num'}, num(p.scale_ups) + ' / ' + num(p.scale_downs)));
    });
    fill($('pools').tBodies[0], rows, 'No pools configured.', 6);
  }

  function renderCapacity(usage) {
    const t = usage && usage.total;
    const caps = (usage && usage.capacity) || [];
    if (!t || !caps.length) {
      $('capacity').textContent = '';
      return;
    }
    const c = caps.reduce((a, r) => ({prov: a.prov + (r.provisioned_gpu_hours || 0),
      used: a.used + (r.used_gpu_hours || 0), idle: a.idle + (r.idle_cost_micros || 0),
      cost: a.cost + (r.cost_micros || 0)}), {prov: 0, used: 0, idle: 0, cost: 0});
    $('capacity').textContent = 'Metered: ' + c.prov.toFixed(2) + ' GPU-h provisioned, ' +
      c.used.toFixed(2) + ' used (' + pct(c.used, c.prov).toFixed(0) + '%), cost ' + money(c.cost) +
      ', idle ' + money(c.idle) + '.';
  }

  function budgetCell(b) {
    if (!b) return h('td', {class: 'muted'}, '-');
    const parts = [];
    for (const period of ['daily', 'monthly']) {
      const p = b[period];
      if (!p) continue;
      const used = pct(p.spent_micros, p.cap_micros);
      const raw = p.cap_micros > 0 ? (100 * p.spent_micros) / p.cap_micros : 0;
      parts.push(h('div', {class: 'budget', 'data-period': period},
        h('span', {class: 'period'}, period), bar(used, level(raw)),
        h('span', {class: 'val'}, money(p.spent_micros) + ' / ' + money(p.cap_micros) +
          ' (' + raw.toFixed(0) + '%)')));
    }
    if (b.exhausted) parts.push(h('span', {class: 'badge failed'}, b.hard_cap ? 'capped' : 'over budget'));
    return h('td', {}, parts);
  }

  function renderProjects(data, usage) {
    const byName = new Map();
    const get = (name) => {
      if (!byName.has(name)) byName.set(name, {name});
      return byName.get(name);
    };
    for (const p of data.projects || []) Object.assign(get(p.name), {share: p});
    for (const b of data.budgets || []) get(b.project).budget = b;
    for (const r of (usage && usage.rows) || []) {
      if (r.idle || !r.project) continue;
      const p = get(r.project);
      p.gpuHours = (p.gpuHours || 0) + (r.gpu_hours || 0);
      p.cost = (p.cost || 0) + (r.cost_micros || 0);
    }
    const rows = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)).map((p) => {
      const s = p.share;
      return h('tr', {'data-project': p.name},
        h('td', {}, h('strong', {}, p.name)),
        h('td', {class: 'num'}, s ? s.running_gpus + ' (' + s.quota_gpus + ')' +
          (s.borrowed_gpus ? ' +' + s.borrowed_gpus + ' borrowed' : '') : '-'),
        h('td', {class: 'num'}, s ? s.pending_jobs : '-'),
        h('td', {class: 'num', title: s ? 'recent use (decayed): ' + s.usage_gpu_hours.toFixed(2) : null},
          hours(p.gpuHours !== undefined ? p.gpuHours : (s ? s.usage_gpu_hours : null))),
        h('td', {class: 'num'}, p.cost !== undefined ? money(p.cost) : '-'),
        budgetCell(p.budget));
    });
    fill($('projects').tBodies[0], rows, 'No projects configured.', 6);
  }

  function eventRow(e) {
    return h('tr', {'data-event': e.id, 'data-kind': e.kind},
      h('td', {class: 'nowrap'}, clock(e.time)),
      h('td', {}, h('span', {class: 'kind'}, e.kind)),
      h('td', {class: 'num'}, e.job_id ? '#' + e.job_id : ''),
      h('td', {}, e.node || ''),
      h('td', {class: 'message'}, e.message || ''));
  }

  function eventItem(e) {
    return h('li', {'data-event': e.id},
      h('span', {class: 'muted nowrap'}, clock(e.time) + ' '), h('span', {class: 'kind'}, e.kind),
      ' ', e.message || '');
  }

  function keepNewest(list, add, n) {
    return list.concat(add).slice(-n);
  }

  function takeEvents(data) {
    const got = (data.events || []).filter((e) => eventCursor === null || e.id > eventCursor);
    got.sort((a, b) => a.id - b.id);
    if (got.length) eventCursor = got[got.length - 1].id;
    events = keepNewest(events, got, EVENTS_KEPT);
    scaling = keepNewest(scaling, got.filter((e) => SCALING_KINDS.has(e.kind)), SCALING_KEPT);
    alerts = keepNewest(alerts, got.filter((e) => e.kind === 'budget_alert'), ALERTS_KEPT);
  }

  function renderEvents() {
    fill($('events').tBodies[0], events.slice().reverse().map(eventRow), 'No events yet.', 5);
    const list = (ul, items, empty) => ul.replaceChildren(...(items.length
      ? items.slice().reverse().map(eventItem) : [h('li', {class: 'muted'}, empty)]));
    list($('scaling'), scaling, 'none yet');
    list($('alerts'), alerts, 'none');
  }

  function renderQueues(queues) {
    $('queues').replaceChildren(...queues.map((q) => {
      const caps = [];
      if (q.max_running_jobs) caps.push('max ' + q.max_running_jobs + ' jobs');
      if (q.max_running_gpus) caps.push('max ' + q.max_running_gpus + ' GPUs');
      return h('span', {class: 'chip', 'data-queue': q.name, title: caps.join(', ') || null},
        h('b', {}, q.name), ' ' + q.running_jobs + ' running · ' + q.pending_jobs + ' pending · ' +
        q.running_gpus + ' GPUs' + (caps.length ? ' (' + caps.join(', ') + ')' : ''));
    }));
  }

  function setOptions(select, names) {
    const keep = select.value;
    const opts = [h('option', {}, 'all')];
    opts[0].value = '';
    for (const n of names) opts.push(h('option', {}, n));
    select.replaceChildren(...opts);
    select.value = names.includes(keep) ? keep : '';
  }

  function renderSummary(queues, gpu) {
    const s = $('summary');
    const parts = [];
    if (queues) {
      const run = queues.reduce((a, q) => a + q.running_jobs, 0);
      const pend = queues.reduce((a, q) => a + q.pending_jobs, 0);
      parts.push(h('span', {class: 'stat', 'data-stat': 'running'}, h('b', {}, run), ' running'));
      parts.push(h('span', {class: 'stat', 'data-stat': 'pending'}, h('b', {}, pend), ' pending'));
    }
    if (gpu) {
      parts.push(h('span', {class: 'stat'}, h('b', {}, gpu.ready + '/' + gpu.nodes), ' nodes ready'));
      parts.push(h('span', {class: 'stat'}, h('b', {}, gpu.used + '/' + gpu.total), ' GPUs busy'));
    }
    s.replaceChildren(...parts);
  }

  /* The newest events: `tail` the first time, then everything since the
   * newest one seen. A server that ignores `tail` answers the oldest page
   * (EVENTS_PAGE): then page forward with `since` to catch up, a bounded
   * number of pages per refresh. */
  const EVENTS_PAGE = 1000;
  async function fetchEvents() {
    let got = [];
    let path = eventCursor === null ? '/v1/events?tail=' + EVENTS_KEPT
      : '/v1/events?since=' + eventCursor + '&limit=' + EVENTS_PAGE;
    for (let page = 0; page < 20; page++) {
      const list = (await api(path)).events || [];
      got = got.concat(list).slice(-EVENTS_PAGE);
      if (list.length < EVENTS_PAGE) break;
      path = '/v1/events?since=' + list[list.length - 1].id + '&limit=' + EVENTS_PAGE;
    }
    return {events: got};
  }

  /* ---- the refresh loop ------------------------------------------ */
  function jobsPath() {
    const q = new URLSearchParams({limit: String(JOB_LIMIT)});
    for (const [k, id] of [['project', 'f-project'], ['queue', 'f-queue'], ['state', 'f-state']])
      if ($(id).value) q.set(k, $(id).value);
    return '/v1/jobs?' + q.toString();
  }

  async function refresh() {
    if (!token()) return;
    if (inFlight) {
      again = true; /* a filter changed mid-refresh: go again when this one ends */
      return;
    }
    inFlight = true;
    again = false;
    clearTimeout(timer);
    const calls = {
      jobs: jobsPath(),
      nodes: '/v1/nodes',
      pools: '/v1/pools',
      projects: '/v1/projects',
      usage: '/v1/usage',
      queues: '/v1/queues',
    };
    const names = Object.keys(calls);
    const settled = await Promise.allSettled(names.map((n) => api(calls[n])).concat([fetchEvents()]));
    names.push('events');
    inFlight = false;
    const res = {};
    const err = {};
    names.forEach((n, i) => {
      if (settled[i].status === 'fulfilled') res[n] = settled[i].value;
      else err[n] = settled[i].reason;
    });
    if (Object.values(err).some((e) => e instanceof HttpError && e.status === 401)) {
      signOut('The server refused this token (401). Sign in again.');
      return;
    }
    /* A project token may be refused admin-only data (403): hide that panel.
     * A token refused everything (an agent's) cannot use the dashboard at all. */
    const forbidden = (n) => err[n] instanceof HttpError && err[n].status === 403;
    if (names.every(forbidden)) {
      signOut('This token may not read cluster data (403): ' + err.jobs.message);
      return;
    }
    const panel = (id, name, draw) => {
      const p = $(id);
      show(p, !forbidden(name));
      if (forbidden(name)) return;
      panelError(p, err[name] || null);
      if (err[name]) return;
      /* data the page cannot draw shows as that panel's error, and the
       * refreshes go on (an exception here once stopped them for good) */
      try { draw(); } catch (e) { panelError(p, e); }
    };
    panel('panel-jobs', 'jobs', () => renderJobs(res.jobs));
    let gpu = null;
    panel('panel-nodes', 'nodes', () => { gpu = renderNodes(res.nodes); });
    panel('panel-pools', 'pools', () => { renderPools(res.pools); renderCapacity(res.usage); });
    panel('panel-projects', 'projects', () => renderProjects(res.projects, res.usage));
    panel('panel-events', 'events', () => { takeEvents(res.events); renderEvents(); });
    try {
      if (res.queues) {
        setOptions($('f-queue'), res.queues.queues.map((q) => q.name));
        renderQueues(res.queues.queues);
      }
      if (res.projects) {
        const names2 = new Set((res.projects.projects || []).map((p) => p.name));
        for (const b of res.projects.budgets || []) names2.add(b.project);
        setOptions($('f-project'), [...names2].sort());
      }
      renderSummary(res.queues ? res.queues.queues : null, gpu);
    } catch (e) {
      err.summary = e;
    }
    const other = Object.entries(err).filter(([, e]) => !(e instanceof HttpError && e.status === 403));
    const g = $('global-error');
    g.textContent = other.length ? 'Some data could not be loaded: ' +
      other.map(([n, e]) => n + ' (' + e.message + ')').join('; ') : '';
    show(g, other.length > 0);
    $('updated').textContent = 'updated ' + clock(Date.now() / 1000);
    generation++;
    document.body.setAttribute('data-refreshed', String(generation));
    if (again) refresh();
    else schedule();
  }

  function schedule() {
    clearTimeout(timer);
    const s = refreshSeconds();
    if (s > 0) timer = setTimeout(refresh, s * 1000);
  }

  function resetData() {
    events = [];
    scaling = [];
    alerts = [];
    eventCursor = null;
  }

  function signOut(message) {
    clearTimeout(timer);
    sessionStorage.removeItem(TOKEN_KEY);
    resetData();
    show($('dash'), false);
    show($('controls'), false);
    show($('login'), true);
    $('summary').replaceChildren();
    $('login-error').textContent = message || '';
    document.body.setAttribute('data-view', 'login');
    $('token').focus();
  }

  function signIn() {
    show($('login'), false);
    show($('dash'), true);
    show($('controls'), true);
    document.body.setAttribute('data-view', 'dashboard');
    $('refresh').value = String(refreshSeconds());
    if (![...$('refresh').options].some((o) => o.selected && o.value === String(refreshSeconds()))) {
      $('refresh').append(h('option', {}, refreshSeconds() + ' s'));
      $('refresh').lastChild.value = String(refreshSeconds());
      $('refresh').value = String(refreshSeconds());
    }
    refresh();
  }

  document.addEventListener('DOMContentLoaded', () => {
    takeFragment();
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token').value.trim();
      if (!t) {
        $('login-error').textContent = 'Enter a token.';
        return;
      }
      sessionStorage.setItem(TOKEN_KEY, t);
      $('token').value = '';
      resetData();
      signIn();
    });
    $('logout').addEventListener('click', () => signOut(''));
    $('refresh').addEventListener('change', () => {
      sessionStorage.setItem(REFRESH_KEY, $('refresh').value);
      schedule();
    });
    for (const id of ['f-project', 'f-queue', 'f-state'])
      $(id).addEventListener('change', () => refresh());
    if (token()) signIn();
    else signOut('');
  });
})();
