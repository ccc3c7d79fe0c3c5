// memstrata inspector: a static page over the /v1 API. No build step, no dependencies.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { key: "", user: "", session: "", current: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    node.append(c instanceof Node ? c : document.createTextNode(c === null || c === undefined ? "" : String(c)));
  }
  return node;
}

function say(message, isError = false) {
  $("status").textContent = message;
  $("status").className = isError ? "error" : "";
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.key };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null;
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const msg = (data.error && data.error.message) || res.statusText;
    throw new Error(res.status + ": " + msg);
  }
  return data;
}

const userPath = () => "/v1/users/" + encodeURIComponent(state.user);
const day = (iso) => (iso ? iso.slice(0, 16).replace("T", " ") : "");
const num = (x, d = 3) => (typeof x === "number" ? x.toFixed(d) : x === null || x === undefined ? "–" : String(x));

function recordButton(rec) {
  return el("button", { class: "link", "data-record": rec.id, onclick: () => openRecord(rec.id) }, "open");
}

function table(headers, rows, layer) {
  const head = el("tr", {}, headers.map((h) => el("th", {}, h)));
  return el("table", { "data-layer": layer }, el("thead", {}, head), el("tbody", {}, rows));
}

const WIDE = new Set(["text", "topic", "goal", "steps", "value", "key"]);

const LAYERS = [
  ["short_term", "Short-term turns", ["when", "role", "text", ""],
    (it) => [day(it.record.observed_at), it.record.role, it.record.content.raw]],
  ["mid_term", "Mid-term clusters", ["topic", "members", "hits", "visits", "heat", ""],
    (it) => [it.record.content.raw, it.details.members, it.details.hits, it.details.visits, num(it.details.heat)]],
  ["summaries", "Summaries", ["when", "kind", "text", ""],
    (it) => [day(it.record.observed_at), it.details.kind, it.record.content.raw]],
  ["facts", "Facts", ["key", "value", "confidence", "mentions", "versions", ""],
    (it) => [it.details.key, it.details.value, num(it.details.confidence, 2), it.details.mentions, it.details.versions]],
  ["episodes", "Episodes", ["when", "text", ""],
    (it) => [day(it.record.observed_at), it.record.content.raw]],
  ["notes", "Notes and knowledge", ["when", "importance", "text", ""],
    (it) => [day(it.record.observed_at), num(it.details.importance, 2), it.record.content.raw]],
  ["key", "Key memory", ["origin", "priority", "text", ""],
    (it) => [it.details.origin, it.details.priority, it.record.content.raw]],
  ["tasks", "Tasks", ["status", "goal", "steps", ""],
    (it) => [it.details.status, it.details.goal,
      (it.details.steps || []).map((s) => s.description + " [" + s.status + "]").join("; ")]],
];

async function loadLayers() {
  const q = new URLSearchParams({ limit: "50" });
  if (state.session) q.set("session", state.session);
  const data = await api("GET", userPath() + "/layers?" + q);
  $("counts").textContent = Object.entries(data.counts).map(([k, v]) => k + " " + v).join(" · ");
  const root = $("layers");
  root.replaceChildren();
  for (const [name, title, headers, cells] of LAYERS) {
    const items = data[name] || [];
    const rows = items.map((it) => el("tr", { "data-id": it.record.id, class: it.record.status === "deleted" ? "deleted" : "" },
      cells(it).map((c, i) => el("td", { class: WIDE.has(headers[i]) ? "text" : "num" }, c)),
      el("td", {}, recordButton(it.record))));
    root.append(el("div", { class: "layer", id: "layer-" + name },
      el("h3", {}, title + " ", el("span", { class: "muted" }, "(" + items.length + ")")),
      items.length ? table(headers, rows, name) : el("p", { class: "muted" }, "empty")));
  }
}

async function runSearch(ev) {
  ev.preventDefault();
  const body = { query: $("query").value, top_k: Number($("top-k").value) || 10, explain: true };
  if (state.session) body.session = state.session;
  try {
    const data = await api("POST", userPath() + "/search", body);
    const rows = data.hits.map((h, i) => el("tr", { "data-id": h.record.id },
      el("td", { class: "num" }, i + 1),
      el("td", { class: "num" }, num(h.score)),
      el("td", {}, h.layer),
      el("td", { class: "text" }, h.record.content.raw,
        el("div", { class: "terms" }, Object.entries(h.explanation || {}).map(([k, v]) =>
          el("span", { "data-term": k }, k + "=" + num(v))))),
      el("td", {}, recordButton(h.record))));
    $("hits").replaceChildren(data.hits.length ? table(["#", "score", "layer", "text and score terms", ""], rows, "hits")
      : el("p", { class: "muted" }, "no hits"));
    say(data.hits.length + " hits for “" + body.query + "”");
  } catch (e) { say(e.message, true); }
}

async function buildContext(ev) {
  ev.preventDefault();
  const body = { token_budget: Number($("budget").value) };
  if ($("context-query").value) body.query = $("context-query").value;
  if (state.session) body.session = state.session;
  try {
    const data = await api("POST", userPath() + "/context", body);
    const blocks = {};
    for (const it of data.items) (blocks[it.block] = blocks[it.block] || []).push(it);
    const parts = [el("p", { id: "context-summary" }, data.tokens + " of " + data.plan.usable + " usable tokens (budget " +
      data.plan.total + ", reserve " + data.plan.reserve + "); " + data.items.length + " items in, " +
      data.dropped.length + " cut, " + data.history.length + " recent turns")];
    for (const [block, items] of Object.entries(blocks)) {
      parts.push(el("div", { class: "block", "data-block": block }, el("strong", {}, block),
        el("ul", {}, items.map((it) => el("li", {}, "[" + it.layer + ", " + num(it.score, 2) + ", " + it.tokens + " tok] " + it.text)))));
    }
    if (data.dropped.length) {
      parts.push(el("div", { class: "block dropped", "data-block": "dropped" }, el("strong", {}, "cut (did not fit)"),
        el("ul", {}, data.dropped.map((it) => el("li", {}, "[" + it.block + ", " + num(it.score, 2) + "] " + it.text)))));
    }
    parts.push(el("details", {}, el("summary", {}, "messages sent to the model"),
      el("pre", {}, data.messages.map((m) => m.role + ": " + m.content).join("\n\n"))));
    $("context").replaceChildren(...parts);
    say("context built");
  } catch (e) { say(e.message, true); }
}

async function openRecord(id) {
  try {
    const rec = await api("GET", userPath() + "/memories/" + encodeURIComponent(id) + "?include_deleted=true");
    const hist = await api("GET", userPath() + "/memories/" + encodeURIComponent(id) + "/history");
    state.current = rec;
    $("record-panel").hidden = false;
    $("record-id").textContent = rec.id + " · " + rec.type + " · v" + rec.version + " · " + rec.status;
    $("edit-content").value = rec.content.raw;
    $("delete").disabled = rec.status === "deleted";
    $("restore").disabled = rec.status !== "deleted";
    $("history").replaceChildren(...hist.records.map((v) => el("li", { "data-version": v.version },
      "v" + v.version + " · " + v.status + " · " + day(v.updated_at) + " · " + v.content.raw)));
  } catch (e) { say(e.message, true); }
}

async function change(kind) {
  const rec = state.current;
  if (!rec) return;
  const base = userPath() + "/memories/" + encodeURIComponent(rec.id);
  try {
    if (kind === "save") await api("PATCH", base, { expected_version: rec.version, content: $("edit-content").value });
    if (kind === "delete") await api("DELETE", base);
    if (kind === "restore") await api("POST", base + "/restore");
    say(kind === "save" ? "saved a new version" : kind === "delete" ? "deleted" : "restored");
    await openRecord(rec.id);
    await loadLayers();
  } catch (e) { say(e.message, true); }
}

async function load(ev) {
  if (ev) ev.preventDefault();
  state.key = $("key").value.trim();
  state.user = $("user").value.trim();
  state.session = $("session").value.trim();
  sessionStorage.setItem("memstrata.key", state.key);
  try {
    const who = await api("GET", "/v1/whoami");
    $("tenant").textContent = "tenant " + who.tenant + " (" + who.role + ")";
    await loadLayers();
    say("loaded " + state.user);
  } catch (e) { say(e.message, true); }
}

function init() {
  const params = new URLSearchParams(location.hash.slice(1));
  $("key").value = params.get("key") || sessionStorage.getItem("memstrata.key") || "";
  $("user").value = params.get("user") || "";
  $("session").value = params.get("session") || "";
  $("who").addEventListener("submit", load);
  $("search-form").addEventListener("submit", runSearch);
  $("context-form").addEventListener("submit", buildContext);
  $("edit-form").addEventListener("submit", (ev) => { ev.preventDefault(); change("save"); });
  $("delete").addEventListener("click", () => change("delete"));
  $("restore").addEventListener("click", () => change("restore"));
  if ($("key").value && $("user").value) load();
}

init();
