// Paddock's web app: the transcript streams over SSE (EventSource resumes
// after the last event it saw, so a reconnect loses and repeats nothing),
// and the sessions list refreshes in place. Text is always set as text.
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function transcript(list) {
  const id = list.dataset.session;
  // Events up to seen were there when the page was rendered: its forms
  // show what they wait for. A later one that waits on a person says so.
  const seen = Number(list.dataset.seen || 0);
  const waiting = (what) => {
    if (document.getElementById("waiting")) return;
    const p = el("p", "park-note");
    p.id = "waiting";
    p.setAttribute("role", "alert");
    p.append(el("span", "", "The agent waits for " + what + ": "));
    const a = el("a", "", "reload to decide");
    a.href = location.pathname;
    p.append(a);
    list.before(p);
  };
  const calls = new Map();
  let assistant = null;
  const status = document.getElementById("status");
  const ambient = document.getElementById("ambient");
  const add = (cls, who, text) => {
    const li = el("li", cls);
    if (who) li.append(el("span", "who", who));
    li.append(el("span", "text", text));
    list.append(li);
    return li;
  };
  // The header (status, what the agent is doing now) follows the session:
  // read again on every status change, and every few seconds.
  let pending = null;
  const header = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try {
        const r = await fetch("/v1/sessions/" + encodeURIComponent(id), { credentials: "same-origin" });
        if (!r.ok) return;
        const x = await r.json();
        status.textContent = x.status;
        status.className = "status status-" + x.status;
        if (ambient) ambient.textContent = x.ambientStatus || "";
      } catch { /* the next one tries again */ }
    }, 200);
  };
  setInterval(header, 5000);
  const src = new EventSource("/v1/sessions/" + encodeURIComponent(id) + "/events");
  src.onmessage = (m) => handle(m);
  for (const kind of ["status", "user_message", "assistant_text", "assistant_message", "tool_call", "question", "answer", "notice", "park", "budget", "network", "phase", "turn", "command", "compaction"]) {
    src.addEventListener(kind, (m) => handle(m, kind));
  }
  src.addEventListener("end", () => src.close());
  function handle(m, kind) {
    let d;
    try { d = JSON.parse(m.data); } catch { return; }
    kind = kind || d.kind;
    const data = d.data || d;
    switch (kind) {
      case "status":
        if (data.status) { status.textContent = data.status; status.className = "status status-" + data.status; }
        assistant = null;
        header();
        break;
      case "user_message":
        add("user", (data.sender && data.sender.id) || "you", data.text);
        assistant = null;
        break;
      case "assistant_text":
        if (!assistant) assistant = add("assistant", "agent", "");
        assistant.querySelector(".text").textContent += data.text;
        break;
      case "tool_call": {
        let li = calls.get(data.id);
        if (!li) { li = add("call", data.name, ""); calls.set(data.id, li); assistant = null; }
        let line = data.state;
        if (data.verdict) line += " · " + data.verdict + (data.rule ? " (" + data.rule + ")" : "");
        if (data.approvedBy) line += " · by " + (data.approvedBy.by || data.approvedBy.rule || data.approvedBy.kind);
        if (data.args) line += "\n" + (typeof data.args === "string" ? data.args : JSON.stringify(data.args));
        if (data.result) line += "\n" + data.result;
        if (data.error) line += "\n" + data.error;
        li.querySelector(".text").textContent = line;
        li.dataset.state = data.state;
        if (data.state === "awaiting_approval" && d.seq > seen) waiting("a decision on " + data.name);
        break;
      }
      case "question":
        add("question", "question", (data.questions || []).map((q) => q.question).join(" / "));
        if (d.seq > seen) waiting("an answer");
        break;
      case "answer": {
        const picked = Object.entries(data.answers || {}).map(([q, a]) => q + ": " + a);
        if (data.response) picked.push(data.response);
        add("answer", "answer", picked.join(" · "));
        break;
      }
      case "notice":
        add(kind, kind, data.text || "");
        break;
      case "park":
        if (data.park) add("park", "park", data.park.reason + (data.park.resolution ? ": " + data.park.resolution : ": " + data.park.needs));
        break;
      case "network":
        add("network", data.allowed ? "⇄" : "⛔", (data.host || "") + ":" + (data.port || "") + (data.reason ? " " + data.reason : ""));
        break;
      default:
        break;
    }
    if (ambient && data.ambientStatus) ambient.textContent = data.ambientStatus;
  }
}

function liveRows(tbody) {
  const refresh = async () => {
    const u = new URL(location.href);
    u.searchParams.set("fragment", "rows");
    try {
      const r = await fetch(u, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (r.redirected) { location.reload(); return; } // logged out: the page says so
      if (r.ok) {
        const html = await r.text();
        const t = document.createElement("template");
        t.innerHTML = html; // server-rendered by html/template: escaped
        tbody.replaceChildren(...t.content.childNodes);
      }
    } catch { /* the next tick tries again */ }
  };
  setInterval(refresh, 2000);
}

document.addEventListener("DOMContentLoaded", () => {
  const t = document.getElementById("transcript");
  if (t) transcript(t);
  const rows = document.getElementById("rows");
  if (rows) liveRows(rows);
});
