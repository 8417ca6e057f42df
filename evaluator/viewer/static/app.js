// finmcp view: runs -> samples -> one sample (timeline, calls, reference diff). Vanilla JS, no libraries.
// Every value from the store goes into the page as text (textContent), never as HTML.
"use strict";

const POLL_MS = 1000;
const LONG_OUTPUT = 600;
const $app = () => document.getElementById("app");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "style") for (const [name, v] of Object.entries(value)) node.style.setProperty(name, v);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${response.status} ${url}`);
  return body;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "–";
  return typeof x === "number" && !Number.isInteger(x) ? x.toFixed(digits) : String(x);
}

function ms(x) {
  if (x === null || x === undefined) return "–";
  return x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(x < 10 ? 2 : 0)} ms`;
}

function pretty(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
  }
  return JSON.stringify(value, null, 2);
}

function outputText(call) {
  if (call.output_cut) return `${call.output_head}\n… (cut: ${call.output_cut})`;
  const result = call.result;
  if (result && Array.isArray(result.content)) {
    const parts = result.content.map((block) => block.type === "text" ? pretty(block.text) : pretty(block));
    if (!parts.length && result.structuredContent !== undefined) return pretty(result.structuredContent);
    return parts.join("\n");
  }
  return pretty(result);
}

function folded(label, text, className) {
  const pre = el("pre", { class: className, text });
  const lines = text.split("\n").length;
  if (text.length <= LONG_OUTPUT && lines <= 12) return el("div", { class: "field" }, el("span", { class: "label", text: label }), pre);
  return el("details", { class: "field fold" }, el("summary", { text: `${label} (${text.length} chars, ${lines} lines)` }), pre);
}

function setCrumbs(...items) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...items.map((item) => item.href ? el("a", { href: item.href, text: item.text }) : el("span", { text: item.text })));
  document.title = ["finmcp view", ...items.map((i) => i.text)].join(" · ");
}

function liveBadge(on) {
  const badge = document.getElementById("live");
  badge.textContent = on ? "live" : "";
  badge.className = on ? "on" : "";
}

function every(ms, fn) {
  let busy = false;
  return setInterval(async () => {
    if (busy || document.hidden) return;
    busy = true;
    try { await fn(); } catch (e) { console.warn(e); } finally { busy = false; }
  }, ms);
}

// ---------------------------------------------------------------- runs
async function runsPage() {
  setCrumbs({ text: "runs" });
  const data = await getJSON("/api/runs");
  document.getElementById("store").textContent = data.store + (data.bench ? ` · bench ${data.bench}` : "");
  const rows = data.runs.map((run) => el("tr", { class: "run-row", "data-run": run.run_id },
    el("td", {}, el("a", { href: `/runs/${encodeURIComponent(run.run_id)}`, text: run.run_id })),
    el("td", { text: run.created }),
    el("td", { class: "num", text: run.samples }),
    el("td", { class: "num", text: run.calls }),
    el("td", { class: "meta", text: run.meta ? JSON.stringify(run.meta) : "" })));
  $app().replaceChildren(
    el("h1", { text: `Runs (${data.runs.length})` }),
    data.runs.length ? el("table", { class: "grid runs" },
      el("thead", {}, el("tr", {}, ...["run", "created", "samples", "calls", "meta"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows)) : el("p", { class: "muted", text: "No runs in this store yet." }));
  let cursor = data.cursor;
  every(2000, async () => {
    const now = await getJSON("/api/cursor");
    if (now.cursor !== cursor) { cursor = now.cursor; liveBadge(true); await runsPage(); }
  });
}

// ---------------------------------------------------------------- samples
const FILTERS = ["q", "status", "tool", "failed", "min_f1", "max_f1"];

async function samplesPage(run) {
  setCrumbs({ text: "runs", href: "/" }, { text: run });
  const params = new URLSearchParams(location.search);
  const pages = [null];  // keyset cursors of the pages seen (for "previous")
  let after = params.get("after");
  const form = el("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); apply(); } },
    el("input", { name: "q", placeholder: "search sample id or tool", value: params.get("q") || "" }),
    el("select", { name: "status" }, ...["", "ok", "tool_error", "rpc_error", "transport_error", "cancelled", "pending"].map(
      (s) => el("option", { value: s, text: s || "any status", selected: s === (params.get("status") || "") }))),
    el("input", { name: "tool", placeholder: "tool", value: params.get("tool") || "" }),
    el("label", {}, el("input", { type: "checkbox", name: "failed", checked: params.get("failed") === "1" }), " failed only"),
    el("input", { name: "min_f1", placeholder: "F1 ≥", size: 5, value: params.get("min_f1") || "" }),
    el("input", { name: "max_f1", placeholder: "F1 ≤", size: 5, value: params.get("max_f1") || "" }),
    el("button", { type: "submit", text: "filter" }));
  const table = el("tbody");
  const status = el("p", { class: "muted pager-status" });
  const prev = el("button", { text: "← previous", onclick: () => { pages.pop(); after = pages.pop() ?? null; load(); } });
  const next = el("button", { text: "next →" });
  $app().replaceChildren(el("h1", { text: `Samples of ${run}` }), form,
    el("table", { class: "grid samples" },
      el("thead", {}, el("tr", {}, ...["sample", "calls", "turns", "trials", "failed", "pending", "tools", "F1", "EMR", "latency"].map((h) => el("th", { text: h })))),
      table),
    el("div", { class: "pager" }, prev, next, status));

  function query() {
    const q = new URLSearchParams();
    for (const name of FILTERS) {
      const input = form.elements[name];
      const value = input.type === "checkbox" ? (input.checked ? "1" : "") : input.value.trim();
      if (value) q.set(name, value);
    }
    return q;
  }
  function apply() { pages.length = 0; pages.push(null); after = null; load(); }
  let cursor = 0;
  async function load() {
    const q = query();
    history.replaceState(null, "", `${location.pathname}${q.toString() ? "?" + q : ""}`);
    if (after) q.set("after", after);
    q.set("limit", "50");
    const data = await getJSON(`/api/runs/${encodeURIComponent(run)}/samples?${q}`);
    cursor = data.cursor;
    pages.push(after);
    table.replaceChildren(...data.samples.map((s) => el("tr", { class: "sample-row" + (s.failed ? " has-failed" : ""), "data-sample": s.sample_id },
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(run)}/samples/${encodeURIComponent(s.sample_id)}`, text: s.sample_id })),
      el("td", { class: "num", text: s.calls }),
      el("td", { class: "num", text: s.turns }),
      el("td", { class: "num", text: s.trials }),
      el("td", { class: "num" + (s.failed ? " bad" : ""), text: s.failed }),
      el("td", { class: "num", text: s.pending }),
      el("td", { class: "tools" }, Object.entries(s.tools).map(([tool, n]) => el("span", { class: "chip", text: n > 1 ? `${tool} ×${n}` : tool }))),
      el("td", { class: "num score", text: s.score ? fmt(s.score.f1) : "–" }),
      el("td", { class: "num", text: s.score ? s.score.emr : "–" }),
      el("td", { class: "num", text: ms(s.latency_ms) }))));
    prev.disabled = pages.length <= 1;
    next.disabled = !data.next;
    next.onclick = () => { after = data.next; load(); };
    status.textContent = data.samples.length ? `${data.samples.length} samples on this page${data.next ? "" : " (last page)"}` : "no samples match";
  }
  await load();
  every(2000, async () => {
    const now = await getJSON("/api/cursor");
    if (now.cursor !== cursor && pages.length <= 2) { liveBadge(true); pages.pop(); await load(); }
  });
}

// ---------------------------------------------------------------- one sample
async function samplePage(run, sample) {
  const params = new URLSearchParams(location.search);
  const compare = params.get("compare");
  const trial = params.get("trial");
  setCrumbs({ text: "runs", href: "/" }, { text: run, href: `/runs/${encodeURIComponent(run)}` }, { text: sample });
  const runs = (await getJSON("/api/runs")).runs.map((r) => r.run_id);
  const picker = el("select", { name: "compare", onchange: () => {
    const q = new URLSearchParams(location.search);
    if (picker.value) q.set("compare", picker.value); else q.delete("compare");
    location.search = q.toString();
  } }, el("option", { value: "", text: "compare with another run…" }),
  ...runs.filter((r) => r !== run).map((r) => el("option", { value: r, text: r, selected: r === compare })));
  const panes = el("div", { class: compare ? "panes compare" : "panes" });
  $app().replaceChildren(el("div", { class: "sample-head" }, el("h1", { text: sample }), picker), panes);
  const shown = [run, ...(compare ? [compare] : [])];
  const views = shown.map((r) => new SampleView(r, sample, trial));
  panes.replaceChildren(...views.map((v) => v.root));
  await Promise.all(views.map((v) => v.load()));
  const scale = () => Math.max(...views.map((v) => v.span()));
  views.forEach((v) => v.render(shown.length > 1 ? scale() : null));
  every(POLL_MS, async () => {
    const changed = await Promise.all(views.map((v) => v.poll()));
    if (changed.some(Boolean)) { liveBadge(true); views.forEach((v) => v.render(shown.length > 1 ? scale() : null)); }
  });
}

class SampleView {
  constructor(run, sample, trial) {
    this.run = run; this.sample = sample; this.trial = trial;
    this.root = el("section", { class: "pane", "data-run": run });
    this.open = new Set();
  }
  url() {
    const q = this.trial !== null ? `?trial=${encodeURIComponent(this.trial)}` : "";
    return `/api/runs/${encodeURIComponent(this.run)}/samples/${encodeURIComponent(this.sample)}${q}`;
  }
  async load() { this.data = await getJSON(this.url()); }
  calls() { return this.data.calls.filter((c) => c.trial === this.data.trial); }
  modelTurns() { return (this.data.model_turns || []).filter((m) => m.trial === this.data.trial); }
  span() {
    const items = [...this.calls(), ...this.modelTurns().map(modelAsBar)];
    if (!items.length) return 1;
    const t0 = Math.min(...items.map((c) => c.t_req_ns));
    const t1 = Math.max(...items.map((c) => c.t_resp_ns ?? c.t_req_ns));
    return Math.max(1, t1 - t0);
  }
  async poll() {
    const pending = this.data.calls.filter((c) => c.status === "pending").map((c) => c.id);
    const q = new URLSearchParams({ since: String(this.data.cursor) });
    if (pending.length) q.set("pending", pending.join(","));
    const inc = await getJSON(`${this.url().split("?")[0]}/calls?${q}`);
    const changed = inc.calls.length > 0;
    this.data.cursor = Math.max(this.data.cursor, inc.cursor);
    if (!changed) return false;
    this.root.querySelectorAll("details[open][data-key]").forEach((d) => this.open.add(d.dataset.key));
    if (this.data.reference) { await this.load(); return true; }  // the diff and metrics change with the calls
    const byId = new Map(this.data.calls.map((c) => [c.id, c]));
    for (const call of inc.calls) byId.set(call.id, call);
    this.data.calls = [...byId.values()].sort((a, b) => a.trial - b.trial || a.turn - b.turn || a.seq - b.seq || a.id - b.id);
    if (!this.data.trials.includes(this.data.trial) && this.data.calls.length) this.data.trial = this.data.calls[0].trial;
    return true;
  }
  render(span) {
    const d = this.data;
    const marks = d.diff ? d.diff.predicted : {};
    const calls = this.calls();
    const head = el("div", { class: "pane-head" }, el("h2", { text: `run ${this.run}` }),
      d.trials.length > 1 ? el("span", { class: "muted", text: ` trial ${d.trial} of ${d.trials.join(", ")}` }) : null,
      el("span", { class: "muted count", text: ` ${calls.length} calls` }));
    const main = el("div", { class: "pane-main" },
      timeline(calls, marks, span, this.modelTurns()),
      el("div", { class: "calls" }, calls.map((c) => callCard(c, marks[String(c.id)], this.open))));
    const side = el("aside", { class: "reference" },
      d.metrics ? metricsTable(d.metrics) : null,
      d.diff ? referencePanel(d.diff) : el("p", { class: "muted", text: d.reference_missing || "start the viewer with --bench to see the reference and the diff" }),
      d.grounding && d.grounding.length ? groundingPanel(d.grounding) : null);
    this.root.replaceChildren(head, el("div", { class: "pane-body" }, main, side));
  }
}

// grounded answers: each answer's claims with verdict and evidence (docs/evaluator.md "Grounded answers")
function groundingPanel(answers) {
  return el("div", { class: "grounding" }, el("h3", { text: "grounded answers" }),
    answers.map((a) => el("div", { class: "grounding-turn" },
      el("p", { class: "muted", text: `turn ${a.turn}: ${a.counts.supported} supported, ${a.counts.unsupported} unsupported, ${a.counts.stale} stale, ${a.counts.not_checkable} not checkable` }),
      el("ul", {}, a.claims.map((c) => el("li", { class: `claim ${c.verdict}` },
        el("code", { text: c.text }), el("span", { text: ` ${c.verdict}` }),
        el("span", { class: "muted", text: ` ${c.evidence}` })))))));
}

function groupHue(group) { return group === null || group === undefined ? 210 : (200 + group * 67) % 360; }
const MARK_TEXT = { ok: "matches ref", wrong_args: "wrong args", missing: "missing", extra: "extra", order: "order" };

// a model-door exchange as a timeline item: it starts at its request, ends after its duration
function modelAsBar(m) { return { ...m, model_turn: true, t_resp_ns: m.duration_ms == null ? null : m.t_req_ns + m.duration_ms * 1e6 }; }

function modelRow(m, t0, total, last) {
  const end = m.t_resp_ns ?? last;
  const tokens = m.input_tokens == null ? "usage not reported" : `${m.input_tokens} in / ${m.output_tokens} out / ${m.cached_tokens ?? 0} cached`;
  const asked = m.tools.length ? `asked for ${m.tools.join(", ")}` : (m.final_text != null ? `answer: ${m.final_text}` : m.status);
  const bar = el("span", {
    class: `bar model status-${m.status}`, "data-model-id": m.id,
    title: `${m.model || m.api} · ${m.status} · ${ms(m.duration_ms)} (first token ${ms(m.ttft_ms)}) · ${tokens} · ${asked}`,
    style: { left: `${((m.t_req_ns - t0) / total) * 100}%`, width: `${Math.max(((end - m.t_req_ns) / total) * 100, 0)}%` },
  });
  return el("div", { class: "row model-turn", "data-model-id": m.id },
    el("span", { class: "label", text: `model ${m.model || m.api}${m.tools.length ? " → " + m.tools.join(", ") : m.final_text != null ? " → answer" : ""}` }),
    el("div", { class: "track" }, bar));
}

function timeline(calls, marks, span, models = []) {
  const box = el("div", { class: "gantt", "data-calls": calls.length, "data-model-turns": models.length });
  const modelBars = models.map(modelAsBar);
  if (!calls.length && !modelBars.length) { box.append(el("p", { class: "muted", text: "no calls yet" })); return box; }
  const items = [...calls, ...modelBars];
  const t0 = Math.min(...items.map((c) => c.t_req_ns));
  const last = Math.max(...items.map((c) => c.t_resp_ns ?? c.t_req_ns));
  const total = Math.max(span || 0, last - t0, 1);
  const axis = el("div", { class: "axis" }, el("span", { class: "label" }), el("div", { class: "track" },
    ...[0, 0.25, 0.5, 0.75, 1].map((f) => el("span", { class: "tick", style: { left: `${f * 100}%` }, text: ms((f * total) / 1e6) }))));
  box.append(axis);
  let turn = null;
  // the model's turns go between the tool calls they caused, in the order things started
  const ordered = [...calls, ...modelBars].sort((a, b) => (a.turn ?? -1) - (b.turn ?? -1) || a.t_req_ns - b.t_req_ns);
  for (const call of ordered) {
    if (call.turn !== turn) {
      turn = call.turn;
      box.append(el("div", { class: "turn-head", text: `turn ${turn ?? "–"}` }));
    }
    if (call.model_turn) { box.append(modelRow(call, t0, total, last)); continue; }
    const end = call.t_resp_ns ?? last;
    const left = ((call.t_req_ns - t0) / total) * 100;
    const width = Math.max(((end - call.t_req_ns) / total) * 100, 0);
    const mark = ((marks || {})[String(call.id)] || [])[0] || "";
    const bar = el("a", {
      class: `bar status-${call.status} ${mark ? "mark-" + mark : ""}`,
      href: `#call-${call.id}`, "data-call-id": call.id, "data-group": call.call_group ?? "", "data-status": call.status,
      title: `${call.tool} · ${call.status} · ${ms(call.latency_ms)} · group ${call.call_group ?? "–"} (${call.group_source || "–"})`,
      style: { left: `${left}%`, width: `${width}%`, "--hue": groupHue(call.call_group) },
    });
    box.append(el("div", { class: "row", "data-group": call.call_group ?? "" },
      el("span", { class: "label", text: `#${call.seq ?? "?"} ${call.tool}` }), el("div", { class: "track" }, bar)));
  }
  return box;
}

function callCard(call, marks, open) {
  const key = `call-${call.id}`;
  const args = pretty(call.arguments);
  const output = call.status === "pending" ? "" : outputText(call);
  const details = folded("output", output, "output");
  if (details.tagName === "DETAILS") { details.dataset.key = key; if (open.has(key)) details.open = true; }
  return el("article", { class: `call status-${call.status}`, id: key, "data-call-id": call.id },
    el("header", {},
      el("span", { class: "seq", text: `#${call.seq ?? "?"}` }),
      el("strong", { class: "tool", text: call.tool }),
      el("span", { class: `badge status-${call.status}`, text: call.status }),
      ...(marks || []).map((m) => el("span", { class: `badge mark mark-${m}`, text: MARK_TEXT[m] || m })),
      el("span", { class: "muted", text: `${ms(call.latency_ms)} · turn ${call.turn ?? "–"} · group ${call.call_group ?? "–"} (${call.group_source || "–"}) · ${call.wall_time || ""}` })),
    call.error ? el("div", { class: "error", text: call.error }) : null,
    folded("arguments", args, "args"),
    call.status === "pending" ? el("p", { class: "muted", text: "waiting for the answer…" }) : details);
}

const METRIC_LABELS = { p: "precision", r: "recall", f1: "F1", consist: "same order", emr: "EMR (paper)", emr_seq: "EMR (lenient)",
  n_ref: "reference calls", n_pred: "predicted calls", matched: "matched", exact: "exact calls", arg_f1: "argument F1",
  dep_f1: "dependency F1", dup_excess: "redundant calls", first_error: "first wrong group", malformed: "malformed arguments" };

function metricsTable(metrics) {
  return el("table", { class: "metrics" }, el("tbody", {},
    Object.entries(metrics).map(([k, v]) => el("tr", { "data-metric": k }, el("th", { text: METRIC_LABELS[k] || k }), el("td", { class: "num", text: fmt(v) })))));
}

function referencePanel(diff) {
  const c = diff.counts;
  const summary = el("p", { class: "diff-summary" },
    ...["ok", "wrong_args", "missing", "extra", "order"].map((m) => el("span", { class: `badge mark mark-${m}`, text: `${m.replace("_", " ")} ${c[m]}` })));
  let position = 0;
  const turns = diff.turns.map((turn) => el("div", { class: "ref-turn" },
    el("div", { class: "turn-head", text: `turn ${turn.turn}` }),
    turn.user ? el("p", { class: "user", text: turn.user }) : null,
    turn.groups.map((group) => {
      position += 1;
      const first = position === diff.first_error_group;
      return el("div", { class: "ref-group" + (first ? " first-error" : ""), title: first ? "first wrong group" : null },
        group.map((call) => el("div", { class: "ref-call " + call.marks.map((m) => "mark-" + m).join(" "), "data-marks": call.marks.join(" ") },
          el("span", { class: "tool", text: call.tool }),
          ...call.marks.map((m) => el("span", { class: `badge mark mark-${m}`, text: m.replace("_", " ") })),
          call.matched_call !== null ? el("a", { href: `#call-${call.matched_call}`, class: "muted", text: " ↦ call" }) : null,
          call.arg_diff.length ? el("span", { class: "arg-diff", text: ` differs: ${call.arg_diff.join(", ")}` }) : null,
          el("pre", { class: "args", text: pretty(call.arguments) }))));
    })));
  return el("div", { class: "diff" }, el("h3", { text: "reference" }), summary, turns);
}

// ---------------------------------------------------------------- router
async function route() {
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (parts[0] === "runs" && parts.length >= 4 && parts[2] === "samples") return await samplePage(parts[1], parts.slice(3).join("/"));
    if (parts[0] === "runs" && parts.length === 2) return await samplesPage(parts[1]);
    return await runsPage();
  } catch (error) {
    $app().replaceChildren(el("p", { class: "error", text: String(error.message || error) }));
  }
}

document.addEventListener("DOMContentLoaded", route);
