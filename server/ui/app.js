// braid's dashboard: the cluster (workers, jobs with live progress), one
// job (its progress from the server-sent event stream, a per-unit timeline
// and the throughput over time) and the operations catalogue. Plain
// JavaScript against the same API the CLI uses, nothing fetched from
// elsewhere. The token lives in sessionStorage and goes in the
// Authorization header of every call (the event stream too: it is read
// with fetch, since EventSource cannot send headers).
"use strict";

const TOKEN_KEY = "braid-token";
let token = sessionStorage.getItem(TOKEN_KEY) || "";
let cleanups = []; // what the current view must stop when it is left

class AuthError extends Error {}

// h builds an element: h("td", {class: "num"}, "12"). Text is set as
// text, never parsed as HTML.
function h(tag, attrs, ...children) {
  const svg = ["svg", "rect", "line", "text", "polyline", "g", "title"].includes(tag);
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// errorText is the message of braid's error answer r, with its code in
// front unless plain is set.
async function errorText(r, plain) {
  try {
    const b = await r.json();
    if (b && b.error) return plain ? b.error.message : b.error.code + ": " + b.error.message;
  } catch (_) { /* not braid's JSON */ }
  return r.status + " " + r.statusText;
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (token) headers.Authorization = "Bearer " + token;
  const r = await fetch(path, Object.assign({}, opts, { headers }));
  if (r.status === 401) throw new AuthError(await errorText(r, true));
  if (!r.ok) throw new Error(await errorText(r));
  return r;
}

async function getJSON(path) {
  return (await api(path)).json();
}

// follow reads a server-sent event stream with fetch and calls onEvent
// with each event's type and decoded data, until the stream ends or
// signal aborts.
async function follow(path, onEvent, signal) {
  const r = await api(path, { signal });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let type = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(type, JSON.parse(data));
    }
  }
}

// every calls fn now and every ms until the view is left. A failed call
// is shown and tried again (a server restarting comes back); only a
// refused token stops it, for the log-in form.
function every(ms, fn) {
  let timer = null, stopped = false;
  const tick = async () => {
    try {
      await fn();
      clearError();
    } catch (e) {
      if (e instanceof AuthError) { fail(e); return; }
      fail(e);
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  cleanups.push(() => { stopped = true; clearTimeout(timer); });
}

function clearError() {
  const p = document.getElementById("view-error");
  if (p) p.remove();
}

const main = () => document.getElementById("main");

function show(...nodes) {
  main().replaceChildren(...nodes);
}

function fail(e) {
  // Without a token the server's "needs a token" is no error: the form
  // says what to do. A token it refused (expired, revoked) is one.
  if (e instanceof AuthError) { login(token ? "The server refused the saved token: " + e.message : ""); return; }
  if (e && e.name === "AbortError") return;
  const p = document.getElementById("view-error") || main().appendChild(h("p", { id: "view-error", class: "error" }));
  p.textContent = String(e && e.message ? e.message : e);
}

// login shows the log-in form, with why (if not empty) as its error.
function login(why) {
  leave();
  token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("logout").hidden = true;
  const node = document.getElementById("login-tpl").content.cloneNode(true);
  show(node);
  loginError(why);
  document.getElementById("token").addEventListener("input", () => loginError(""));
  document.getElementById("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    token = document.getElementById("token").value.trim();
    try {
      await getJSON("/v1/workers");
    } catch (e) {
      const why = String(e.message || e);
      loginError(e instanceof AuthError ? "The server refused this token: " + why : why);
      token = "";
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    route();
  });
}

// loginError shows text under the log-in form, or hides the line when
// text is empty.
function loginError(text) {
  const p = document.getElementById("login-error");
  p.textContent = text || "";
  p.hidden = !text;
}

function leave() {
  for (const f of cleanups) f();
  cleanups = [];
}

const fmtTime = (s) => (s ? new Date(s).toLocaleTimeString() : "");
const fmtMS = (ms) => (ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms.toFixed(1) + " ms");

function progressBar(p, id) {
  const total = Math.max(p.total, 1);
  const sent = h("span", { class: "sent" }), done = h("span", {});
  // Through the CSSOM: the page's CSP allows no inline style attribute.
  sent.style.width = `${(100 * (p.done + (p.sent || 0))) / total}%`;
  done.style.width = `${(100 * p.done) / total}%`;
  return h("span", { class: "bar", id, title: `${p.done} done, ${p.sent || 0} sent of ${p.total}` }, sent, done);
}

// --- the cluster: workers and jobs

// headRow is a table's header row; the columns named in nums are numbers.
function headRow(names, nums) {
  return h("thead", {}, h("tr", {}, names.map((c) => h("th", { class: nums.includes(c) ? "num" : null }, c))));
}

const WORKER_COLS = ["worker", "state", "transport", "lent/streams", "threads", "busy", "free", "in flight", "cores", "units", "last seen", "error"];
const JOB_COLS = ["job", "op", "state", "progress", "units", "done", "avg/unit", "received", "reason"];

async function clusterView() {
  const workers = h("tbody", { id: "workers" });
  const jobs = h("tbody", { id: "jobs" });
  show(
    h("h1", {}, "Cluster"),
    h("h2", {}, "Workers"),
    h("table", {}, headRow(WORKER_COLS, ["lent/streams", "threads", "busy", "free", "in flight", "cores", "units"]), workers),
    h("h2", {}, "Jobs"),
    h("table", {}, headRow(JOB_COLS, ["units", "done", "avg/unit"]), jobs),
  );
  every(1000, async () => {
    const [ws, js] = await Promise.all([getJSON("/v1/workers"), getJSON("/v1/jobs")]);
    workers.replaceChildren(...ws.map(workerRow));
    if (ws.length === 0) workers.replaceChildren(h("tr", {}, h("td", { colspan: WORKER_COLS.length, class: "muted" }, "no workers registered")));
    js.reverse(); // newest first
    jobs.replaceChildren(...js.map(jobRow));
    if (js.length === 0) jobs.replaceChildren(h("tr", {}, h("td", { colspan: JOB_COLS.length, class: "muted" }, "no jobs")));
  });
}

// workerRow is a worker's row: its threads busy with this server's units
// and the rest free, as the server counts them now (the worker's own
// free_threads is from when it registered), blank unless it is up.
function workerRow(w) {
  const up = w.state === "up", threads = w.info.max_threads, busy = w.busy_threads || 0;
  const num = (cls, v) => h("td", { class: "num " + cls }, up ? v : "");
  return h("tr", { "data-worker": w.info.name },
    h("td", {}, w.info.name), h("td", { class: "state-" + w.state }, w.state), h("td", {}, w.transport || ""),
    h("td", { class: "num" }, `${w.lease}/${w.streams}`), h("td", { class: "num threads" }, threads),
    num("busy", busy), num("free", Math.max(threads - busy, 0)), num("in-flight", w.in_flight_units || 0),
    h("td", { class: "num" }, w.info.cores), h("td", { class: "num" }, w.units_done),
    h("td", {}, fmtTime(w.last_seen)), clipped("error", w.error));
}

// jobRow is a job's row; its last cell says why a job failed, or why a
// queued one waits.
function jobRow(j) {
  const reason = j.error ? clipped("error job-error", j.error) : clipped("muted job-waiting", j.waiting);
  return h("tr", { "data-job": j.id },
    h("td", {}, h("a", { href: "#/jobs/" + j.id }, j.id)), h("td", {}, j.spec.op),
    h("td", { class: "state-" + j.state }, j.state), h("td", {}, progressBar(j.progress)),
    h("td", { class: "num" }, j.progress.total), h("td", { class: "num" }, j.progress.done),
    h("td", { class: "num" }, j.avg_unit_ms ? fmtMS(j.avg_unit_ms) : ""), h("td", {}, fmtTime(j.received_at)), reason);
}

// clipped is a cell for text that may be long: cut to the column's width
// with an ellipsis, the whole text in its tooltip.
function clipped(cls, text) {
  return h("td", { class: "clip " + cls, title: text || null }, text || "");
}

// --- one job: live progress, timeline, throughput

async function jobView(id) {
  const facts = h("dl", { class: "facts", id: "job-facts" });
  const gantt = h("div", { id: "gantt-box" });
  const tput = h("div", { id: "throughput-box" });
  show(h("h1", {}, "Job ", h("span", { id: "job-id" }, id)), facts,
    h("h2", {}, "Units over time, by worker and stream"), timelineLegend(), gantt,
    h("h2", {}, "Throughput (units finished per interval)"), tput);
  let job = null, lastUnits = 0;
  const draw = (j) => {
    job = j;
    const p = j.progress;
    const rows = [
      ["state", h("span", { id: "job-state", class: "state-" + j.state }, j.state)],
      ["operation", `${j.spec.op} on ${j.spec.input}`],
      ["progress", h("span", {}, progressBar(p, "job-progress"), " ", h("span", { id: "job-done" }, p.done), ` of ${p.total} done, ${p.failed || 0} failed, ${p.sent || 0} at workers`)],
      ["received", new Date(j.received_at).toLocaleString()],
    ];
    if (j.owner) rows.push(["owner (token)", j.owner]);
    if (j.makespan_ms) rows.push(["makespan", fmtMS(j.makespan_ms)], ["average per unit", fmtMS(j.avg_unit_ms)]);
    if (j.result) rows.push(["result", j.result]);
    if (j.error) rows.push(["error", h("span", { class: "error" }, j.error)]);
    if (j.waiting) rows.push(["waiting", j.waiting]);
    facts.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  };
  const ctl = new AbortController();
  cleanups.push(() => ctl.abort());
  const charts = async () => {
    const j = await getJSON(`/v1/jobs/${encodeURIComponent(id)}?units=1`);
    if (ctl.signal.aborted) return; // the view was left meanwhile
    if (j.units) {
      lastUnits = Date.now();
      gantt.replaceChildren(timeline(j));
      tput.replaceChildren(throughput(j));
    }
    draw(j);
  };
  const terminal = () => job && ["done", "failed", "cancelled"].includes(job.state);
  await charts();
  // Follow the event stream; if it ends before the job does (the server
  // restarted), follow it again a second later.
  (async () => {
    while (!ctl.signal.aborted && !terminal()) {
      try {
        await follow(`/v1/jobs/${encodeURIComponent(id)}/events`, async (type, ev) => {
          draw(ev.job);
          if (type === "done" || Date.now() - lastUnits > 1000) await charts();
        }, ctl.signal);
      } catch (e) {
        if (e instanceof AuthError) { fail(e); return; }
        if (ctl.signal.aborted) return;
        fail(e);
      }
      if (!terminal()) await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  // The timeline grows while units run even when no event comes.
  every(1000, async () => { if (!terminal()) await charts(); });
}

const W = 1000, LABEL = 90, ROW = 16;

// timelineLegend says what the timeline's bars and colours mean.
function timelineLegend() {
  const item = (cls, text) => h("span", { class: "item" }, h("span", { class: "swatch " + cls }), text);
  return h("div", { id: "gantt-legend", class: "legend" },
    item("span", "sent → returned (on the way, or queued at the worker)"),
    item("unit done", "computing at the worker"),
    item("unit running", "running now"),
    item("unit failed", "failed"));
}

// timeline draws one bar per unit from when it was sent to when its result
// came back (or now), one row per worker and stream.
function timeline(j) {
  const t0 = Date.parse(j.received_at);
  const now = Date.now();
  const units = j.units.filter((u) => u.sent);
  const rowsKey = [...new Set(units.map((u) => `${u.worker} s${u.stream}`))].sort();
  const end = Math.max(t0 + 1, ...units.map((u) => (u.returned ? Date.parse(u.returned) : Math.min(now, t0 + 3600e3))));
  const x = (t) => LABEL + ((W - LABEL - 10) * (t - t0)) / (end - t0);
  const height = 24 + ROW * Math.max(rowsKey.length, 1);
  const svg = h("svg", { id: "gantt", width: W, height, viewBox: `0 0 ${W} ${height}` });
  rowsKey.forEach((k, i) => svg.append(h("text", { x: 4, y: 14 + i * ROW + 10 }, k)));
  // A unit's bar runs from when it was sent to when its result came back,
  // pale; the part the worker computed (its compute_ms, ending at the
  // return, so shifted by the return's transit) is solid.
  for (const u of units) {
    const a = Date.parse(u.sent), b = u.returned ? Date.parse(u.returned) : now;
    const row = rowsKey.indexOf(`${u.worker} s${u.stream}`);
    const y = 14 + row * ROW;
    const tip = `unit ${u.index} on ${u.worker} stream ${u.stream}: ${u.state}, ${fmtMS(b - a)} from sent to returned, ${fmtMS(u.queued_ms)} queued and ${fmtMS(u.compute_ms)} computing at the worker`;
    svg.append(h("rect", { class: "span", x: x(a), y, width: Math.max(1, x(b) - x(a)), height: ROW - 3 }, h("title", {}, tip)));
    const c = u.returned ? Math.max(a, b - u.compute_ms) : a;
    svg.append(h("rect", { class: "unit " + u.state, "data-unit": u.index, x: x(c), y: y + 2, width: Math.max(1, x(b) - x(c)), height: ROW - 7 }, h("title", {}, tip)));
  }
  svg.append(h("text", { x: LABEL, y: height - 2 }, "0"), h("text", { x: W - 60, y: height - 2 }, fmtMS(end - t0)));
  if (units.length === 0) svg.append(h("text", { x: LABEL, y: 30 }, "no unit sent yet"));
  return svg;
}

// throughput draws units finished per interval (40 intervals over the job).
function throughput(j) {
  const t0 = Date.parse(j.received_at);
  const done = j.units.filter((u) => u.returned).map((u) => Date.parse(u.returned) - t0).sort((a, b) => a - b);
  const height = 120, n = 40;
  const svg = h("svg", { id: "throughput", width: W, height, viewBox: `0 0 ${W} ${height}` });
  if (done.length === 0) {
    svg.append(h("text", { x: LABEL, y: 60 }, "no unit finished yet"));
    return svg;
  }
  const span = Math.max(done[done.length - 1], 1);
  const bins = new Array(n).fill(0);
  for (const t of done) bins[Math.min(n - 1, Math.floor((n * t) / span))]++;
  const top = Math.max(...bins);
  const pts = bins.map((c, i) => `${LABEL + ((W - LABEL - 10) * (i + 0.5)) / n},${height - 16 - ((height - 30) * c) / top}`);
  svg.append(h("polyline", { class: "tp", points: pts.join(" ") }),
    h("text", { x: 4, y: 14 }, `${(top / (span / n / 1000)).toFixed(0)} units/s`),
    h("text", { x: 4, y: height - 16 }, "0"),
    h("text", { x: W - 60, y: height - 2 }, fmtMS(span)));
  return svg;
}

// --- the operations catalogue

async function opsView() {
  const ops = await getJSON("/v1/operations");
  show(h("h1", {}, "Operations"),
    h("table", { id: "ops" }, headRow(["operation", "what it does", "tiles", "parameters"], []),
      h("tbody", {}, ops.map((o) => h("tr", { "data-op": o.name },
        h("td", {}, h("div", {}, o.name), opKind(o)), h("td", {}, o.summary || ""), h("td", {}, o.tileable ? "yes" : ""),
        h("td", {}, o.params && o.params.length ? o.params.map(paramLine) : h("span", { class: "muted" }, "none")))))));
}

// opKind is the line under a user operation's name: its version, how it
// runs and its module's digest (in full in the tooltip).
function opKind(o) {
  if (!o.kind || o.kind === "builtin") return h("div", { class: "muted kind" }, "built-in");
  const how = o.kind === "exec" ? `${o.interpreter} script` : `${o.kind}, ${o.abi || "command"} ABI`;
  return h("div", { class: "muted kind" }, `v${o.version} · ${how} · `, h("code", { title: o.digest }, (o.digest || "").slice(0, 12)));
}

// paramLine is one parameter: name, type, default and range, then its
// doc when it has one, e.g. "sigma float, default 2, range 0..64 — …".
function paramLine(p) {
  const facts = [p.type];
  if (p.default !== undefined && p.default !== "") facts.push("default " + p.default);
  if (p.min !== undefined || p.max !== undefined) facts.push(`range ${p.min ?? ""}..${p.max ?? ""}`);
  return h("div", { class: "param", "data-param": p.name }, h("code", {}, p.name), " " + facts.join(", "),
    p.doc ? h("span", { class: "muted" }, " — " + p.doc) : null);
}

async function route() {
  leave();
  // A token may come in the fragment (#token=... or #/jobs/ID&token=...):
  // it is taken, and out of the address (and the history) at once.
  const m = location.hash.match(/[#&]token=([^&]+)/);
  if (m) {
    token = decodeURIComponent(m[1]);
    sessionStorage.setItem(TOKEN_KEY, token);
    const rest = location.hash.replace(m[0], "").replace(/^#?/, "#");
    history.replaceState(null, "", location.pathname + (rest === "#" ? "#/" : rest));
  }
  document.getElementById("logout").hidden = !token;
  document.getElementById("server").textContent = location.host;
  const hash = location.hash.replace(/^#/, "") || "/";
  try {
    if (hash.startsWith("/jobs/")) await jobView(decodeURIComponent(hash.slice(6)));
    else if (hash === "/ops") await opsView();
    else await clusterView();
  } catch (e) {
    fail(e);
  }
}

document.getElementById("logout").addEventListener("click", () => login(""));
window.addEventListener("hashchange", route);
route();
