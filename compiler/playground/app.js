// spmdc playground: plain JavaScript, no dependencies. The editor is a textarea
// over a highlighted copy of the text (the overlay), which also carries the
// diagnostics' underlines and the profile's heat map.
"use strict";

const FILE = "playground.spmd";
const LINE_HEIGHT = 18;
const KEYWORDS = new Set(("export task uniform varying void bool int int8 int16 int32 int64 " +
  "uint uint8 uint16 uint32 uint64 float double const static inline extern struct enum typedef " +
  "if else for while do return break continue switch case default foreach foreach_tiled " +
  "foreach_active foreach_unique cif cfor cwhile cdo launch sync unmasked shared sizeof " +
  "programIndex programCount taskIndex taskCount true false NULL new delete soa").split(" "));

const $ = (id) => document.getElementById(id);
const state = {
  examples: [],
  compiled: null,
  ran: null,
  step: 0,
  selectedLine: null,
  compileTimer: null,
  compileSeq: 0,
};

// ---------------------------------------------------------------- requests

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  let json = null;
  try { json = await r.json(); } catch (e) { json = { error: { message: `HTTP ${r.status}` } }; }
  if (!r.ok && !json.error) json.error = { message: `HTTP ${r.status}` };
  return json;
}

function switches() {
  const s = {};
  document.querySelectorAll(".switch").forEach((c) => { s[c.value] = c.checked; });
  return s;
}

function programFields() {
  return {
    source: $("source").value,
    target: $("target").value,
    optimize: $("optimize").checked,
    switches: switches(),
    config: $("config").value,
    no_dac: $("no-dac").checked,
  };
}

function launchFields() {
  const grid = $("grid").value.trim();
  const block = $("block").value.trim();
  return {
    entry: $("entry").value.trim(),
    args: $("args").value.trim().split(/\s+/).filter((a) => a.length > 0),
    grid: grid || null,
    block: block || null,
    timing: $("timing").checked,
  };
}

// ---------------------------------------------------------------- the command line

function shellQuote(word) {
  return /^[A-Za-z0-9_.,=\/-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

function commandLine() {
  const p = programFields();
  const l = launchFields();
  const words = ["spmdc", "run", FILE, "--target", p.target];
  if (l.entry) words.push("--entry", l.entry);
  for (const a of l.args) words.push("--arg", a);
  if (l.grid) words.push("--grid", l.grid);
  if (l.block) words.push("--block", l.block);
  if (l.timing && p.target !== "interp") words.push("--timing");
  if (!p.optimize) words.push("--no-opt");
  for (const [k, on] of Object.entries(p.switches)) {
    if (on) words.push("--" + k.replace(/_/g, "-"));
    if (on && k === "shuffle") words.push("all");
  }
  if (p.target === "dac-gpu") {
    if (p.config !== "gtx480") words.push("--config", p.config);
    if (p.no_dac) words.push("--no-dac");
  }
  words.push("--stats", "--profile", "--trace", "--trace-gang", $("trace-gang").value || "0");
  return words.map(shellQuote).join(" ");
}

function showCommand() { $("command").textContent = "$ " + commandLine(); }

// ---------------------------------------------------------------- the editor

/// Char index of each UTF-8 byte offset of `text` (spans come in bytes).
function byteToChar(text) {
  const map = [];
  let b = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i);
    const n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    for (let k = 0; k < n; k++) map[b + k] = i;
    b += n;
    if (c >= 0x10000) i++;
  }
  map[b] = text.length;
  return (byte) => map[Math.min(byte, b)] ?? text.length;
}

/// A highlight class per character: keyword, number, string or comment.
function highlightClasses(text) {
  const cls = new Array(text.length).fill("");
  const re = /\/\/[^\n]*|\/\*[\s\S]*?(\*\/|$)|"(\\.|[^"\\\n])*"?|'(\\.|[^'\\\n])*'?|\b\d[\w.]*|\b[A-Za-z_]\w*/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    const t = m[0];
    let c = "";
    if (t.startsWith("//") || t.startsWith("/*")) c = "com";
    else if (t[0] === '"' || t[0] === "'") c = "str";
    else if (/^\d/.test(t)) c = "num";
    else if (KEYWORDS.has(t)) c = "kw";
    if (c) cls.fill(c, m.index, m.index + t.length);
  }
  return cls;
}

function escapeHtml(s) {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

function userDiagnostics() {
  const d = (state.compiled && state.compiled.diagnostics) || [];
  return d.filter((x) => x.file === FILE);
}

/// Per-line heat in [0, 1] from the last run's profile, and the gutter's text.
function heat() {
  const p = state.ran && state.ran.profile;
  const out = new Map();
  if (!p || !$("heat").checked) return out;
  const metric = $("heat-metric").value;
  const value = (c) => metric === "instructions" ? c.instructions
    : metric === "stalls" ? Object.values(c.stalls || {}).reduce((a, b) => a + b, 0)
    : c.lane_slots - c.active_lanes;
  const rows = p.lines.filter((l) => l.file === FILE);
  const max = Math.max(1, ...rows.map(value));
  for (const r of rows) out.set(r.line, { share: value(r) / max, label: String(value(r)) });
  return out;
}

function renderEditor() {
  const text = $("source").value;
  const cls = highlightClasses(text);
  const under = new Array(text.length).fill("");
  const toChar = byteToChar(text);
  for (const d of userDiagnostics()) {
    if (!Array.isArray(d.span)) continue;
    let [s, e] = [toChar(d.span[0]), toChar(d.span[1])];
    if (e <= s) e = Math.min(text.length, s + 1);
    under.fill(d.severity === "error" ? "err" : "warn", s, e);
  }
  const hot = heat();
  const lines = text.split("\n");
  let pos = 0;
  let html = "";
  let gutter = "";
  lines.forEach((line, i) => {
    const n = i + 1;
    let body = "";
    let run = "";
    let runCls = null;
    for (let k = 0; k <= line.length; k++) {
      const c = k < line.length ? [cls[pos + k], under[pos + k]].filter(Boolean).join(" ") : null;
      if (c !== runCls || k === line.length) {
        if (run) body += runCls ? `<span class="${runCls}">${escapeHtml(run)}</span>` : escapeHtml(run);
        run = "";
        runCls = c;
      }
      if (k < line.length) run += line[k];
    }
    const h = hot.get(n);
    const style = h ? ` style="background: rgba(255, 80, 0, ${(0.08 + 0.5 * h.share).toFixed(3)})"` : "";
    const sel = state.selectedLine === n ? " selected" : "";
    html += `<span class="line${sel}" data-line="${n}"${style}>${body || " "}</span>`;
    gutter += h ? `<span class="hot">${h.label.padStart(8)} ${String(n).padStart(4)}</span>\n` : `${String(n).padStart(13)}\n`;
    pos += line.length + 1;
  });
  $("overlay").innerHTML = html;
  $("gutter").innerHTML = gutter;
  const cols = Math.max(40, ...lines.map((l) => l.length)) + 4;
  const wrap = $("code-wrap");
  wrap.style.height = `${lines.length * LINE_HEIGHT + 12}px`;
  wrap.style.minWidth = `${cols}ch`;
}

function renderDiagnostics() {
  const ul = $("diagnostics");
  ul.innerHTML = "";
  const all = (state.compiled && state.compiled.diagnostics) || [];
  for (const d of all) {
    const li = document.createElement("li");
    li.className = d.severity;
    li.textContent = `${d.file ?? ""}:${d.line ?? "?"}:${d.column ?? "?"}: ${d.severity}[${d.code}]: ${d.message}`;
    if (d.file === FILE && d.line) li.addEventListener("click", () => selectLine(d.line, true));
    ul.appendChild(li);
  }
}

function lineAtEvent(e) {
  const ta = $("source");
  const rect = ta.getBoundingClientRect();
  return Math.floor((e.clientY - rect.top - 4) / LINE_HEIGHT) + 1;
}

function hoverDiagnostics(e) {
  const line = lineAtEvent(e);
  const here = userDiagnostics().filter((d) => d.line === line ||
    (d.labels || []).some((l) => l.primary && l.line <= line && line <= l.end_line));
  $("source").title = here.map((d) => `${d.severity}: ${d.message}`).join("\n");
}

function caretLine() {
  const ta = $("source");
  return ta.value.slice(0, ta.selectionStart).split("\n").length;
}

/// Selects source line `n`: outlines it, and the assembly rows from it.
function selectLine(n, focusEditor) {
  state.selectedLine = n;
  renderEditor();
  document.querySelectorAll("#asm tr.link").forEach((tr) => {
    tr.classList.toggle("selected", Number(tr.dataset.line) === n);
  });
  const first = document.querySelector("#asm tr.selected");
  if (first && !focusEditor) first.scrollIntoView({ block: "nearest" });
  if (focusEditor) {
    const lineEl = document.querySelector(`#overlay .line[data-line="${n}"]`);
    if (lineEl) lineEl.scrollIntoView({ block: "nearest" });
  }
}

// ---------------------------------------------------------------- compile views

function scheduleCompile() {
  clearTimeout(state.compileTimer);
  state.compileTimer = setTimeout(compile, 350);
  renderEditor();
  showCommand();
}

async function compile() {
  const seq = ++state.compileSeq;
  $("status").textContent = "compiling…";
  const answer = await post("/api/compile", programFields());
  if (seq !== state.compileSeq) return;
  if (answer.error) {
    $("status").textContent = answer.error.message;
    return;
  }
  state.compiled = answer;
  const errors = (answer.diagnostics || []).filter((d) => d.severity === "error").length;
  $("status").textContent = errors ? `${errors} error(s)` : "compiled";
  renderEditor();
  renderDiagnostics();
  renderTokens();
  $("ast").textContent = answer.ast || "";
  renderPasses();
  renderAsm();
}

function renderTokens() {
  const t = $("tokens");
  const rows = (state.compiled.tokens || []).map((k) =>
    `<tr class="link" data-line="${k.line}"><td>${k.line}:${k.column}</td><td>${k.kind}</td><td>${escapeHtml(k.text)}</td><td>${k.value ?? ""}</td></tr>`);
  t.innerHTML = "<tr><th>at</th><th>kind</th><th>text</th><th>value</th></tr>" + rows.join("");
}

function renderPasses() {
  const passes = state.compiled.passes || [];
  for (const id of ["pass-a", "pass-b"]) {
    const sel = $(id);
    const keep = sel.value;
    sel.innerHTML = passes.map((p, i) => `<option value="${i}">${i}: ${escapeHtml(p.name)}</option>`).join("");
    if (keep && Number(keep) < passes.length) sel.value = keep;
    else sel.value = String(id === "pass-a" ? passes.length - 1 : 0);
  }
  renderIr();
}

/// Line diff of two texts (longest common subsequence).
function diffLines(a, b) {
  const n = a.length, m = b.length;
  if (n * m > 4e7) return null;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(["+", b[j]]); j++; }
    else { out.push(["-", a[i]]); i++; }
  }
  return out;
}

function renderIr() {
  const passes = (state.compiled && state.compiled.passes) || [];
  const a = passes[Number($("pass-a").value)];
  if (!a) { $("ir").textContent = "(no IR: the program does not compile)"; return; }
  if (!$("diff").checked) { $("ir").textContent = a.ir; return; }
  const b = passes[Number($("pass-b").value)];
  const d = diffLines(b.ir.split("\n"), a.ir.split("\n"));
  if (!d) { $("ir").textContent = "(too large to diff)"; return; }
  $("ir").innerHTML = d.map(([k, t]) =>
    k === " " ? escapeHtml(" " + t) + "\n" : `<span class="${k === "+" ? "add" : "del"}">${escapeHtml(k + t)}</span>`).join("");
}

function renderAsm() {
  const target = $("asm-target").value;
  const asm = state.compiled && state.compiled.asm && state.compiled.asm[target];
  const t = $("asm");
  if (!asm) { t.innerHTML = "<tr><td>(no assembly)</td></tr>"; return; }
  if (!asm.rows) {
    const msgs = (asm.diagnostics || []).map((d) => d.message).concat(asm.error ? [asm.error] : []);
    t.innerHTML = `<tr><td>${escapeHtml(msgs.join("\n") || "(cannot compile for this target)")}</td></tr>`;
    return;
  }
  let last = null;
  let html = "<tr><th>address</th><th>line</th><th>instruction</th></tr>";
  for (const r of asm.rows) {
    if (r.function !== last) { html += `<tr><th colspan="3">${escapeHtml(r.function)}:</th></tr>`; last = r.function; }
    const addr = target === "nyuzi" ? "0x" + r.address.toString(16).padStart(6, "0") : r.address;
    html += `<tr class="link" data-line="${r.line ?? ""}"><td>${addr}</td><td>${r.line ?? "-"}</td><td>${escapeHtml(r.text)}</td></tr>`;
  }
  t.innerHTML = html;
  if (state.selectedLine) selectLine(state.selectedLine, false);
}

// ---------------------------------------------------------------- run views

async function run() {
  $("status").textContent = "running…";
  $("run-out").textContent = "running…";
  showTab("run");
  const gang = Number($("trace-gang").value) || 0;
  const body = Object.assign(programFields(), launchFields(), {
    profile: true,
    trace: { gang, limit: 5000 },
  });
  const answer = await post("/api/run", body);
  state.ran = answer;
  state.step = 0;
  renderRun();
  renderProfile();
  renderTrace();
  renderEditor();
}

function renderRun() {
  const a = state.ran;
  const out = [];
  if (a.error) {
    out.push(`error (${a.error.kind ?? "request"}): ${a.error.message}`);
    if (a.error.line) out.push(`  at line ${a.error.line}`);
    $("status").textContent = "failed";
  }
  for (const d of a.diagnostics || []) if (d.severity === "error") out.push(`${d.line}:${d.column}: ${d.message}`);
  const r = a.result;
  if (r) {
    $("status").textContent = `ran on ${r.target}`;
    if (r.output) out.push("output:\n" + r.output);
    if (r.return !== undefined && r.return !== null) out.push(`return = ${JSON.stringify(r.return)}`);
    for (const [name, values] of Object.entries(r.buffers || {})) {
      out.push(`${name} = [${values.slice(0, 256).join(", ")}${values.length > 256 ? ", …" : ""}]`);
    }
    out.push("statistics:");
    if (a.stats_text) out.push(a.stats_text);
    else for (const [k, v] of Object.entries(r.stats || {})) out.push(`  ${k} = ${v}`);
  }
  $("run-out").textContent = out.join("\n");
}

function renderProfile() {
  const p = state.ran && state.ran.profile;
  const t = $("profile");
  if (!p) { t.innerHTML = "<tr><td>(no profile)</td></tr>"; return; }
  const timing = p.stall_causes.length > 0;
  const head = `<tr><th>line</th><th>instructions</th><th>share</th><th>avg lanes</th>${timing ? "<th>stalls</th>" : ""}<th>source</th></tr>`;
  const text = $("source").value.split("\n");
  const row = (label, c, src, line) => {
    const share = p.totals.instructions ? (100 * c.instructions / p.totals.instructions).toFixed(1) + "%" : "-";
    const lanes = c.avg_active_lanes == null ? "-" : c.avg_active_lanes.toFixed(1);
    const stalls = timing ? `<td>${Object.entries(c.stalls || {}).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(", ")}</td>` : "";
    return `<tr class="link" data-line="${line ?? ""}"><td>${label}</td><td>${c.instructions}</td><td>${share}</td><td>${lanes}</td>${stalls}<td>${escapeHtml(src)}</td></tr>`;
  };
  let html = head;
  for (const l of p.lines) html += row(l.file === FILE ? l.line : `${l.file}:${l.line}`, l, l.file === FILE ? (text[l.line - 1] || "").trim() : "", l.file === FILE ? l.line : null);
  for (const b of p.other) html += row("-", b, b.what, null);
  html += row("total", p.totals, "", null);
  t.innerHTML = html;
}

function renderTrace() {
  const t = state.ran && state.ran.trace;
  const steps = (t && t.steps) || [];
  $("step-slider").max = String(Math.max(0, steps.length - 1));
  $("trace-list").innerHTML = steps.map((s, i) =>
    `<span data-step="${i}">${String(s.step).padStart(6)}  ${(s.line ?? "-").toString().padStart(4)}  ${(s.mask ?? "scalar").padEnd(t.lanes)}  ${escapeHtml(s.text)}</span>`).join("");
  showStep(0);
}

function showStep(i) {
  const t = state.ran && state.ran.trace;
  const steps = (t && t.steps) || [];
  if (steps.length === 0) {
    $("step-label").textContent = t ? `${t.unit_kind} ${t.unit} ran no instruction` : "";
    $("step-inst").textContent = "";
    $("lanes").innerHTML = "";
    return;
  }
  i = Math.max(0, Math.min(steps.length - 1, i));
  state.step = i;
  const s = steps[i];
  $("step-slider").value = String(i);
  $("step-label").textContent = `step ${i + 1} of ${steps.length}${t.truncated ? " (limit)" : ""} — ${t.unit_kind} ${t.unit}`;
  $("step-inst").textContent = `${s.function}  @${s.address}  line ${s.line ?? "-"}:  ${s.text}`;
  const lanes = [];
  for (let k = 0; k < t.lanes; k++) {
    const c = s.mask == null ? "scalar" : s.mask[k] === "#" ? "on" : "off";
    lanes.push(`<div class="lane ${c}" title="lane ${k}">${k}</div>`);
  }
  $("lanes").innerHTML = lanes.join("");
  document.querySelectorAll("#trace-list span").forEach((el) => el.classList.toggle("current", Number(el.dataset.step) === i));
  const cur = document.querySelector("#trace-list span.current");
  if (cur) cur.scrollIntoView({ block: "nearest" });
  if (s.line && s.file === FILE) selectLine(s.line, true);
}

// ---------------------------------------------------------------- examples and wiring

function showTab(name) {
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t.id === "tab-" + name));
}

function loadExample(i) {
  const ex = state.examples[i];
  if (!ex) return;
  $("source").value = ex.source;
  const l = ex.launches[0] || { entry: "", args: [] };
  $("entry").value = l.entry;
  $("args").value = l.args.join(" ");
  $("grid").value = l.grid || "";
  $("block").value = l.block || "";
  if (l.target) $("target").value = l.target;
  state.ran = null;
  state.selectedLine = null;
  $("run-out").textContent = l.needs_files
    ? "This launch reads its input from a file (@PATH), which the playground does not: replace that argument (zeros, fill, range or random) to run it."
    : "Run it with the launch from its header, or edit the launch.";
  scheduleCompile();
}

async function init() {
  const r = await fetch("/api/examples");
  state.examples = await r.json();
  $("example").innerHTML = state.examples.map((e, i) => `<option value="${i}">${escapeHtml(e.name)}</option>`).join("");
  const saxpy = state.examples.findIndex((e) => e.name === "saxpy.spmd");
  $("example").value = String(Math.max(0, saxpy));
  loadExample(Math.max(0, saxpy));
}

function wire() {
  $("example").addEventListener("change", (e) => loadExample(Number(e.target.value)));
  $("source").addEventListener("input", scheduleCompile);
  $("source").addEventListener("mousemove", hoverDiagnostics);
  $("source").addEventListener("click", () => selectLine(caretLine(), false));
  $("source").addEventListener("keydown", (e) => {
    if (e.key === "Tab") {
      e.preventDefault();
      const ta = e.target;
      ta.setRangeText("    ", ta.selectionStart, ta.selectionEnd, "end");
      scheduleCompile();
    }
  });
  for (const id of ["target", "config", "optimize", "no-dac"]) $(id).addEventListener("change", scheduleCompile);
  document.querySelectorAll(".switch").forEach((c) => c.addEventListener("change", scheduleCompile));
  for (const id of ["entry", "args", "grid", "block", "trace-gang", "timing"]) $(id).addEventListener("input", showCommand);
  $("timing").addEventListener("change", showCommand);
  $("run").addEventListener("click", run);
  $("heat").addEventListener("change", renderEditor);
  $("heat-metric").addEventListener("change", renderEditor);
  $("pass-a").addEventListener("change", renderIr);
  $("pass-b").addEventListener("change", renderIr);
  $("diff").addEventListener("change", renderIr);
  $("asm-target").addEventListener("change", renderAsm);
  document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
  for (const id of ["asm", "profile", "tokens"]) {
    $(id).addEventListener("click", (e) => {
      const tr = e.target.closest("tr.link");
      if (tr && tr.dataset.line) selectLine(Number(tr.dataset.line), true);
    });
  }
  $("step-first").addEventListener("click", () => showStep(0));
  $("step-back").addEventListener("click", () => showStep(state.step - 1));
  $("step-fwd").addEventListener("click", () => showStep(state.step + 1));
  $("step-last").addEventListener("click", () => showStep(Infinity));
  $("step-slider").addEventListener("input", (e) => showStep(Number(e.target.value)));
}

wire();
init();
