// The page: sessions sidebar (a busy mark on each session running a turn; a toggle on a narrow
// screen), conversation, model picker, cancel, compact and undo, usage footer, the file tree
// with its read-only viewer and the prompt box (Enter sends, Shift+Enter adds a line, @ picks a
// file), all over REST and the /ws channels (the login cookie authenticates both). The open
// session is in the URL (#s=ID), so a reload or a link opens it.

import { Conversation } from "./conversation.js";
import { FilePicker } from "./picker.js";
import { Socket } from "./socket.js";

const $ = (id) => document.getElementById(id);
const state = { session: null, seq: 0, busy: false, sessions: [], attaching: false };

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) {
    location.href = "/login";
    throw new Error("not logged in");
  }
  if (!response.ok) throw new Error((await response.json()).error);
  return response.json();
}

const conversation = new Conversation($("conversation"), (approvalId, choice, reason) =>
  socket.request("agent", { type: "approve", session_id: state.session, approval_id: approvalId, choice, reason })
    .catch((err) => conversation.notice(err.message, "error")));

const socket = new Socket(onFrame, onSocketState);

function setBusy(busy) {
  state.busy = busy;
  $("status").textContent = busy ? "working…" : "";
  updateControls();
}

// Compact and Undo need an open session with no turn running; Send needs no turn running.
function updateControls() {
  $("cancel").disabled = !state.busy;
  $("send").disabled = state.busy;
  $("compact").disabled = state.busy || !state.session;
  $("undo").disabled = state.busy || !state.session;
}

function onSocketState(status) {
  $("status").textContent = status === "connected" ? "" : "reconnecting…";
  if (status === "connected" && state.session) attach(state.session, state.seq);
  if (status === "connected") $("send").disabled = state.busy;
  if (status === "connected") watchBusy();
}

// Ask for the busy marks of every session, then list the sessions again (a turn may have
// begun or ended while the socket was down).
async function watchBusy() {
  try {
    await socket.request("system", { type: "watch_busy" });
    await loadSessions();
  } catch (err) {
    conversation.notice(err.message, "error");
  }
}

function onFrame(channel, data) {
  if (channel === "agent" && data.session_id === state.session) agentFrame(data);
  else if (channel === "fs" && data.type === "fs_event") loadFiles();
  else if (channel === "system" && data.type === "error") conversation.notice(data.message, "error");
  else if (channel === "system" && data.type === "session_busy") markBusy(data.session_id, data.busy);
}

// A turn began or ended in a session: its mark in the list follows.
// A session not listed yet (a new one) is listed again, with its mark.
function markBusy(id, busy) {
  const li = [...$("sessions").children].find((item) => item.dataset.id === id);
  if (li) li.classList.toggle("busy", busy);
  else if (busy) loadSessions();
}

function agentFrame(frame) {
  if (frame.type === "missed") {
    state.seq = Math.max(state.seq, frame.last);
    return conversation.notice(`${frame.message} (open the session again to show its stored conversation)`);
  }
  if (frame.seq <= state.seq) return;
  // While attaching, a live frame can come before the replayed ones it follows: the replay
  // brings it again in order, so only the next frame in line is shown.
  if (state.attaching && frame.seq !== state.seq + 1) return;
  state.seq = frame.seq;
  if (frame.type === "approval_request") conversation.approval(frame);
  else if (frame.type === "approval_resolved") conversation.resolved(frame.approval_id, frame.choice);
  else if (frame.type === "event") showEvent(frame.event);
}

function showEvent(event) {
  switch (event.type) {
    case "text_delta": conversation.appendText(event.text); break;
    case "thinking_delta": conversation.appendThinking(event.text); break;
    case "tool_call": conversation.toolCall(event.id, event.name, event.arguments); break;
    case "tool_result": conversation.toolResult(event); break;
    case "notice": conversation.notice(event.message); break;
    case "retry": conversation.notice(`retrying: ${event.error}`); break;
    case "cost": showTotals(event.session_usage, event.session_cost); break;
    case "failed": conversation.notice(`${event.message}${event.hint ? ` (${event.hint})` : ""}`, "error"); setBusy(false); break;
    case "finished":
      if (event.stop_reason === "cancelled") conversation.notice("cancelled");
      conversation.current = null;
      setBusy(false);
      loadSessions();
      break;
    default: break;
  }
}

function showTotals(usage, cost) {
  $("usage").textContent = `${usage.input_tokens + usage.output_tokens} tokens`;
  $("cost").textContent = cost === null ? "" : `$${cost.toFixed(4)}`;
}

// Attach to a session, its frames after `after` replayed first (they come before the reply).
async function attach(id, after) {
  state.attaching = true;
  try {
    const opened = await socket.request("agent", { type: "resume", session_id: id, after });
    setBusy(opened.busy);
  } finally {
    state.attaching = false;
  }
}

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The session the URL names (#s=ID), or "" when it names none.
function sessionInUrl() {
  return new URLSearchParams(location.hash.slice(1)).get("s") ?? "";
}

// Put the open session in the URL (or take it out), without a new history entry.
function showInUrl(id) {
  if ((id || "") === sessionInUrl()) return;
  history.replaceState(null, "", id ? `#s=${id}` : location.pathname + location.search);
}

// Open the session the URL names; one that is not a session id, or that this server does not
// have, is said plainly and taken out of the URL.
async function openFromUrl() {
  const id = sessionInUrl();
  if (!id || id === state.session) return;
  try {
    if (!SESSION_ID.test(id)) throw new Error(`"${id.slice(0, 80)}" is not a session id`);
    await openSession(id);
  } catch (err) {
    showInUrl(null);
    conversation.clear();
    state.session = null;
    $("title").textContent = "No session";
    conversation.notice(`The session this link names cannot be opened: ${err.message}. It may have ` +
      "been deleted, or belong to another server: pick one from the list or start a new one.", "error");
  }
}

async function openSession(id) {
  const stored = await api(`/api/sessions/${id}`);
  showInUrl(id);
  conversation.clear();
  conversation.history(stored.messages);
  state.session = id;
  state.seq = stored.seq;
  $("title").textContent = stored.session.title || id;
  updateControls();
  $("model").value = stored.session.model;
  showTotals(stored.session.usage, stored.session.cost);
  await attach(id, state.seq);
  markActive();
}

async function newSession() {
  const model = $("model").value || undefined;
  const opened = await socket.request("agent", { type: "open", model });
  conversation.clear();
  state.session = opened.session_id;
  state.seq = 0;
  showInUrl(state.session);
  $("title").textContent = "New session";
  setBusy(false);
  showSidebar(false);
  await loadSessions();
}

async function send(event) {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text) return;
  if (!state.session) await newSession();
  conversation.user(text);
  $("prompt").value = "";
  setBusy(true);
  try {
    await socket.request("agent", { type: "prompt", session_id: state.session, text });
  } catch (err) {
    conversation.notice(err.message, "error");
    setBusy(false);
  }
}

function markActive() {
  for (const li of $("sessions").children) {
    const active = li.dataset.id === state.session;
    li.classList.toggle("active", active);
    if (active && li.dataset.title) $("title").textContent = li.dataset.title;
  }
}

async function loadSessions() {
  const q = $("search").value.trim();
  const page = await api(`/api/sessions?limit=100${q ? `&q=${encodeURIComponent(q)}` : ""}`);
  const list = $("sessions");
  list.innerHTML = "";
  for (const s of page.sessions) {
    const li = document.createElement("li");
    li.dataset.id = s.id;
    li.dataset.title = s.title || "";
    li.classList.toggle("busy", s.busy);
    const mark = document.createElement("span");
    mark.className = "busy-mark";
    mark.title = "A turn is running in this session";
    mark.setAttribute("aria-label", "busy");
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = s.title || s.id;
    name.title = `${s.model} · ${new Date(s.updated_at * 1000).toLocaleString()}`;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "✕";
    remove.title = "Delete this session";
    remove.addEventListener("click", (e) => { e.stopPropagation(); deleteSession(s.id); });
    li.append(mark, name, remove);
    li.addEventListener("click", () => { showSidebar(false); openSession(s.id); });
    list.append(li);
  }
  markActive();
}

async function deleteSession(id) {
  if (!confirm("Delete this session?")) return;
  await api(`/api/sessions/${id}`, { method: "DELETE" });
  if (state.session === id) {
    state.session = null;
    showInUrl(null);
    conversation.clear();
    $("title").textContent = "No session";
    updateControls();
  }
  await loadSessions();
}

async function loadModels() {
  const { providers } = await api("/api/models");
  const config = await api("/api/config");
  const select = $("model");
  for (const p of providers.filter((x) => x.default)) {
    for (const m of p.models) select.append(new Option(m, m));
  }
  if (config.model) select.value = config.model;
}

// Compact or undo the open session; an undo shows the rewound conversation again.
async function sessionAction(type) {
  if (!state.session) return;
  try {
    const done = await socket.request("agent", { type, session_id: state.session });
    if (type === "undo") await openSession(state.session);
    conversation.notice(done.text);
  } catch (err) {
    conversation.notice(err.message, "error");
  }
}

async function changeModel() {
  if (!state.session) return;
  await socket.request("agent", { type: "set_model", session_id: state.session, model: $("model").value });
}

async function listFolder(path, into) {
  const listing = await socket.request("fs", { type: "list", path });
  into.innerHTML = "";
  for (const entry of listing.entries) {
    const li = document.createElement("li");
    li.className = entry.type;
    const label = document.createElement("span");
    label.textContent = entry.name;
    li.append(label);
    label.addEventListener("click", () => (entry.type === "dir" ? toggle(li, entry.path) : view(entry.path)));
    into.append(li);
  }
}

async function toggle(li, path) {
  if (li.classList.toggle("open")) {
    const sub = document.createElement("ul");
    li.append(sub);
    await listFolder(path, sub);
  } else {
    li.querySelector("ul")?.remove();
  }
}

async function view(path) {
  try {
    const file = await socket.request("fs", { type: "read", path });
    $("viewer-path").textContent = file.path;
    $("viewer-content").textContent = file.encoding === "utf-8" ? file.content : "(binary file)";
  } catch (err) {
    $("viewer-path").textContent = path;
    $("viewer-content").textContent = err.message;
  }
  $("viewer").hidden = false;
}

async function loadFiles() {
  await listFolder(".", $("files"));
}

// On a narrow screen the sidebar is a panel over the page, shown by the ☰ toggle.
function showSidebar(shown) {
  document.body.classList.toggle("sidebar-open", shown);
  $("sidebar-toggle").setAttribute("aria-expanded", String(shown));
}

async function findFiles(query) {
  const found = await socket.request("fs", { type: "find", query });
  return found.paths;
}

// Enter sends and Shift+Enter adds a line; a key that finishes an IME composition sends
// nothing. The @ picker, when open, takes its keys first.
function promptKey(e, picker) {
  if (picker.key(e)) return;
  if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
  e.preventDefault();
  if (!$("send").disabled) send(e);
}

async function start() {
  socket.connect();
  $("composer").addEventListener("submit", send);
  const picker = new FilePicker($("prompt"), $("picker"), findFiles);
  $("prompt").addEventListener("keydown", (e) => promptKey(e, picker));
  $("sidebar-toggle").addEventListener("click", () =>
    showSidebar(!document.body.classList.contains("sidebar-open")));
  $("cancel").addEventListener("click", () => socket.request("agent", { type: "cancel", session_id: state.session }));
  $("new-session").addEventListener("click", newSession);
  $("compact").addEventListener("click", () => sessionAction("compact"));
  $("undo").addEventListener("click", () => sessionAction("undo"));
  $("search").addEventListener("input", () => loadSessions());
  $("model").addEventListener("change", changeModel);
  $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
  window.addEventListener("hashchange", openFromUrl);
  await Promise.all([loadSessions(), loadModels()]);
  await openFromUrl();
  await loadFiles();
  await socket.request("fs", { type: "watch", path: "." });
}

start();
