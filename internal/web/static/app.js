// Paddock's web app: the transcript streams over SSE (EventSource resumes
// after the last event it saw, so a reconnect loses and repeats nothing),
// what waits on a person (approvals, a question) is swapped in live from
// the server's own rendering, and the sessions list refreshes in place.
// Text is always set as text; HTML only ever comes from the server's
// templates.
"use strict";

// hiddenChars are the characters that hide or move text (controls but
// newline and tab, bidi overrides, zero-width characters): shown as a
// mark naming them wherever text from an agent or a command is set.
const hiddenChars = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/;
const hiddenRun = new RegExp(hiddenChars.source + "+", "g");

// visibleText is text as nodes, each run of hidden characters a mark.
function visibleText(text) {
  text = String(text);
  if (!hiddenChars.test(text)) return document.createTextNode(text);
  const out = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(hiddenRun)) {
    if (m.index > last) out.append(document.createTextNode(text.slice(last, m.index)));
    const codes = [...new Set([...m[0]].map((c) => "U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")))];
    const mark = document.createElement("span");
    mark.className = "hidden-char";
    mark.title = "an invisible character";
    mark.textContent = codes.join(" ") + (m[0].length > 1 ? " ×" + m[0].length : "");
    out.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.append(document.createTextNode(text.slice(last)));
  return out;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.append(visibleText(text));
  return e;
}

// fragment fetches a server-rendered piece of the current page.
async function fragment(name) {
  const u = new URL(location.href);
  u.searchParams.set("fragment", name);
  const r = await fetch(u, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (r.redirected) { location.reload(); return null; } // logged out: the page says so
  if (!r.ok) return null;
  const t = document.createElement("template");
  t.innerHTML = await r.text(); // rendered by html/template: escaped
  return t.content;
}

// swap replaces container's children with fresh ones, unless the person is
// typing or choosing in it (their focus and input are never taken away).
function swap(container, content) {
  if (!content) return;
  const active = document.activeElement;
  if (active && active !== document.body && container.contains(active)) {
    const typing = active.matches("input:not([type=hidden]), textarea, select") && (active.value || "") !== "";
    if (typing || active.closest("form.question")) return;
    const id = active.id || (active.name && active.value ? active.name + "=" + active.value : "");
    const form = active.closest("form");
    const action = form ? form.getAttribute("action") : "";
    container.replaceChildren(...content.childNodes);
    const again = (active.id && document.getElementById(active.id)) ||
      (action && [...container.querySelectorAll("form")].find((f) => f.getAttribute("action") === action)?.querySelector(`[name="${active.name}"][value="${active.value}"]`));
    if (again) again.focus();
    else if (id) container.focus();
    return;
  }
  container.replaceChildren(...content.childNodes);
}

// markdown lays out an agent's message: paragraphs, headings, lists,
// fenced code, inline code, emphasis and http(s) links. It builds nodes
// and sets text only: no markup the agent wrote is ever interpreted.
function markdown(text) {
  const out = document.createDocumentFragment();
  if (text.length > 100000) { out.append(el("p", "md-p", text)); return out; } // too long to lay out: as written
  const inline = (parent, s) => {
    const re = /(`[^`\n]{1,500}`)|(\*\*[^*\n]{1,500}\*\*)|(\*[^*\n]{1,500}\*|_[^_\n]{1,500}_)|(\[[^\]\n]{1,200}\]\((https?:\/\/[^)\s]{1,2000})\))/g;
    let last = 0;
    for (let m; (m = re.exec(s)) !== null;) {
      if (m.index > last) parent.append(visibleText(s.slice(last, m.index)));
      if (m[1]) parent.append(el("code", "", m[1].slice(1, -1)));
      else if (m[2]) parent.append(el("strong", "", m[2].slice(2, -2)));
      else if (m[3]) parent.append(el("em", "", m[3].slice(1, -1)));
      else {
        const a = el("a", "", m[4].slice(1, m[4].indexOf("](")));
        a.href = m[5];
        a.rel = "noopener noreferrer nofollow";
        parent.append(a);
      }
      last = re.lastIndex;
    }
    if (last < s.length) parent.append(visibleText(s.slice(last)));
  };
  const lines = text.split("\n");
  let para = null;
  let list = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*```/.exec(line);
    if (fence) {
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      out.append(el("pre", "md-code", code.join("\n")));
      para = list = null;
      continue;
    }
    const h = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (h) {
      const p = el("p", "md-h");
      inline(p, h[2]);
      out.append(p);
      para = list = null;
    } else if (item) {
      const tag = item[1] ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag, "md-list"); out.append(list); }
      const li = el("li");
      inline(li, item[2]);
      list.append(li);
      para = null;
    } else if (line.trim() === "") {
      para = list = null;
    } else {
      if (!para) { para = el("p", "md-p"); out.append(para); } else para.append("\n");
      inline(para, line);
      list = null;
    }
  }
  return out;
}

const seconds = (ms) => ms < 1000 ? ms + " ms" : ms < 60000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms / 60000) + " min";
const stateWords = {
  generating: "being written", generated: "written", awaiting_approval: "waits for a decision", calling: "running",
  done: "done", errored: "failed", canceled: "canceled", rejected: "rejected",
};

function parseArgs(raw) {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === "string") { try { return JSON.parse(raw); } catch { return raw; } }
  return raw;
}

// describe shows what a call acts on: the command, the path, an edit as
// its removed and added lines, a search's pattern; else its arguments.
function describe(name, args) {
  if (args === null) return null;
  if (typeof args !== "object") return el("pre", "call-args", String(args));
  const wrap = el("div", "call-what");
  const path = (p) => { const c = el("p", "call-path"); c.append(el("code", "", p)); return c; };
  switch (name) {
    case "run_command":
      wrap.append(el("pre", "call-cmd", "$ " + (args.command || "")));
      break;
    case "edit_file": {
      wrap.append(path(args.path || ""));
      const pre = el("pre", "call-edit");
      for (const l of String(args.old ?? "").split("\n")) pre.append(el("span", "del", "−" + l + "\n"));
      for (const l of String(args.new ?? "").split("\n")) pre.append(el("span", "add", "+" + l + "\n"));
      wrap.append(pre);
      break;
    }
    case "write_file": {
      wrap.append(path(args.path || ""));
      const content = String(args.content ?? "");
      const d = el("details", "call-content");
      d.append(el("summary", "", "the content written (" + content.split("\n").length + " lines)"), el("pre", "", content));
      wrap.append(d);
      break;
    }
    case "read_file": case "list_dir":
      wrap.append(path(args.path || "."));
      break;
    case "ask_user":
      return null; // the question shows as its own entry
    case "search":
      wrap.append(el("pre", "call-cmd", "search " + JSON.stringify(args.pattern || "") + (args.path ? " in " + args.path : "")));
      break;
    default:
      wrap.append(el("pre", "call-args", JSON.stringify(args, null, 2)));
  }
  return wrap;
}

// output shows a result: short ones whole, long ones by their tail with
// the whole a click away; a command's exit status as a badge.
function output(text) {
  const wrap = el("div", "call-out");
  const m = /\n?\[(exit status \d+|timed out after [^\]]*)\]\s*$/.exec(text);
  if (m) wrap.append(el("span", "exit bad", m[1]));
  const lines = text.replace(/\n$/, "").split("\n");
  if (lines.length <= 8) {
    wrap.append(el("pre", "out", text));
    return wrap;
  }
  wrap.append(el("pre", "out tail", "… " + (lines.length - 6) + " lines above\n" + lines.slice(-6).join("\n")));
  const d = el("details", "out-all");
  d.append(el("summary", "", "show all " + lines.length + " lines"), el("pre", "out", text));
  wrap.append(d);
  return wrap;
}

const sizeOf = (n) => n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB";

// attachments lists a message's files: each by name, type, size and
// digest, linked to its content; an image also as a thumbnail.
function attachments(sid, files) {
  const ul = el("ul", "attachments");
  for (const f of files) {
    const li = el("li", "attachment");
    const href = "/v1/sessions/" + encodeURIComponent(sid) + "/attachments/" + encodeURIComponent(f.id);
    if (f.kind === "image") {
      const a = el("a", "thumb");
      a.href = href;
      const img = el("img");
      img.src = href;
      img.alt = f.name;
      img.loading = "lazy";
      a.append(img);
      li.append(a);
    }
    const name = el("a", "name", f.name);
    name.href = href;
    li.append(name, el("span", "meta", " " + f.type + ", " + sizeOf(f.size || 0) + ", sha256 " + String(f.digest || "").slice(0, 12)));
    li.title = ".paddock/attachments/" + f.name + " in the working copy";
    ul.append(li);
  }
  return ul;
}

// composer lets files be dropped on the message form: they join those
// picked, and every file chosen is listed before it is sent.
function composer(form) {
  const input = form.querySelector("input[type=file]");
  const shown = document.getElementById("attached");
  const show = () => {
    shown.replaceChildren();
    for (const f of input.files) shown.append(el("li", "", f.name + " (" + sizeOf(f.size) + ")"));
  };
  input.addEventListener("change", show);
  form.addEventListener("dragover", (e) => { e.preventDefault(); form.classList.add("dropping"); });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (e) => {
    e.preventDefault();
    form.classList.remove("dropping");
    const all = new DataTransfer();
    for (const f of input.files) all.items.add(f);
    for (const f of e.dataTransfer.files) all.items.add(f);
    input.files = all.files;
    show();
  });
}

function transcript(list) {
  const id = list.dataset.session;
  const seen = Number(list.dataset.seen || 0);
  const controls = document.getElementById("controls");
  const calls = new Map(); // call ID → {li, d (every field seen so far), start, end}
  const argsOf = new Map(); // call ID → its arguments, from the model's message
  let assistant = null; // the agent's text being streamed now
  let message = null; // the agent's last message, laid out when complete
  const status = document.getElementById("status");
  const ambient = document.getElementById("ambient");
  const add = (cls, who, text) => {
    const li = el("li", cls);
    if (who) li.append(el("span", "who", who));
    li.append(el("span", "text", text));
    list.append(li);
    return li;
  };
  // What waits on a person is read again whenever the transcript says it
  // changed (a call waits or was decided, a question, an answer, a park,
  // a status), from the server's own rendering.
  let refreshing = null;
  const refresh = () => {
    if (!controls || refreshing) return;
    refreshing = setTimeout(async () => {
      refreshing = null;
      try { swap(controls, await fragment("controls")); } catch { /* the next event tries again */ }
    }, 150);
  };
  // The header (status, what the agent is doing now) follows the session.
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
        if (ambient) ambient.replaceChildren(visibleText(x.ambientStatus || ""));
      } catch { /* the next one tries again */ }
    }, 200);
  };
  setInterval(header, 5000);
  const drawCall = (c) => {
    const d = c.d;
    const li = c.li;
    li.replaceChildren();
    li.dataset.state = d.state;
    li.className = "call state-" + d.state;
    const head = el("div", "call-head");
    head.append(el("span", "who", d.name), el("span", "state", stateWords[d.state] || d.state));
    if (d.approvedBy) {
      const by = d.approvedBy;
      head.append(el("span", "by", by.kind === "human" ? "approved by " + by.by + (d.rule ? " (the policy asks: " + d.rule + ")" : "") : "allowed by " + (by.rule || d.rule || "the policy")));
    } else if (d.verdict) {
      head.append(el("span", "verdict", d.verdict + (d.rule ? " · " + d.rule : "")));
    }
    if (c.start) {
      const t = el("time", "", c.start.toLocaleTimeString());
      t.dateTime = c.start.toISOString();
      t.title = c.start.toString();
      head.append(t);
    }
    if (c.start && c.end) head.append(el("span", "dur", seconds(c.end - c.start)));
    li.append(head);
    if (d.approvedBy && d.approvedBy.note) li.append(el("p", "call-note", "“" + d.approvedBy.note + "” — " + d.approvedBy.by));
    const what = describe(d.name, parseArgs(d.args ?? argsOf.get(d.id)));
    if (what) li.append(what);
    if (d.child) li.append(sessionLink("call-child", "delegated to session ", d.child));
    if (d.error) li.append(el("p", "call-error", d.error));
    if (d.result) li.append(output(d.result));
  };
  // sessionLink is a line naming another session, linked to its page.
  const sessionLink = (cls, words, sid) => {
    const p = el("p", cls, words);
    const a = el("a", "", String(sid).slice(0, 12));
    a.href = "/sessions/" + encodeURIComponent(sid);
    p.append(a);
    return p;
  };
  const src = new EventSource("/v1/sessions/" + encodeURIComponent(id) + "/events");
  src.onmessage = (m) => handle(m);
  for (const kind of ["status", "user_message", "assistant_text", "assistant_message", "tool_call", "question", "answer", "notice", "park", "budget", "network", "phase", "turn", "command", "compaction", "child_approval"]) {
    src.addEventListener(kind, (m) => handle(m, kind));
  }
  src.addEventListener("end", () => src.close());
  function handle(m, kind) {
    let d;
    try { d = JSON.parse(m.data); } catch { return; }
    kind = kind || d.kind;
    const data = d.data || d;
    const live = (d.seq || 0) > seen;
    switch (kind) {
      case "status":
        if (data.status) { status.textContent = data.status; status.className = "status status-" + data.status; }
        assistant = null;
        header();
        if (live) refresh();
        break;
      case "user_message": {
        const li = add("user", (data.sender && data.sender.id) || "you", data.text);
        if (data.attachments && data.attachments.length) li.append(attachments(id, data.attachments));
        assistant = message = null;
        break;
      }
      case "assistant_text":
        if (!assistant) message = assistant = add("assistant", "agent", "");
        assistant.querySelector(".text").append(visibleText(data.text));
        break;
      case "assistant_message":
        if (data.text) {
          // The whole message is known: lay it out (the streamed text
          // was shown as it came).
          const li = message || add("assistant", "agent", "");
          message = null;
          const t = li.querySelector(".text");
          t.classList.add("md");
          t.replaceChildren(markdown(data.text));
        }
        for (const c of data.toolCalls || []) {
          argsOf.set(c.id, c.args);
          if (calls.has(c.id)) drawCall(calls.get(c.id));
        }
        assistant = null;
        break;
      case "tool_call": {
        let c = calls.get(data.id);
        if (!c) { c = { li: el("li", "call"), d: {} }; list.append(c.li); calls.set(data.id, c); assistant = null; }
        for (const [k, v] of Object.entries(data)) if (v !== undefined && v !== null && v !== "") c.d[k] = v;
        const at = d.createdAt ? new Date(d.createdAt) : null;
        if (at && data.state === "calling") c.start = at;
        if (at && ["done", "errored", "canceled", "rejected"].includes(data.state)) { c.end = at; if (!c.start) c.start = at; }
        drawCall(c);
        if (live) refresh();
        break;
      }
      case "question":
        add("question", "question", (data.questions || []).map((q) => q.question).join(" / "));
        if (live) refresh();
        break;
      case "answer": {
        const picked = Object.entries(data.answers || {}).map(([q, a]) => q + ": " + a);
        if (data.response) picked.push(data.response);
        add("answer", "answer", picked.join(" · "));
        if (live) refresh();
        break;
      }
      case "notice":
        add(kind, kind, data.text || "");
        break;
      case "park":
        if (data.park) add("park", "park", data.park.reason + (data.park.resolution ? ": " + data.park.resolution : ": " + data.park.needs));
        if (live) refresh();
        break;
      case "child_approval": {
        // A session this one delegated waits for a person: the inbox decides it.
        const li = add("child-approval", "⇢", (data.call && data.call.name || "a call") + " waits for approval in a delegated session, to " + (data.task || ""));
        li.append(sessionLink("call-child", "see session ", data.session));
        break;
      }
      case "network":
        add("network", data.allowed ? "⇄" : "⛔", (data.host || "") + ":" + (data.port || "") + (data.reason ? " " + data.reason : ""));
        break;
      default:
        break;
    }
    if (ambient && data.ambientStatus) ambient.replaceChildren(visibleText(data.ambientStatus));
  }
}

// filters applies the list's filters as they change: search as you
// type, a choice at once; the address follows, so a reload keeps them.
function filters(form, list) {
  let timer = null;
  const apply = async () => {
    const u = new URL(location.href);
    u.search = new URLSearchParams(new FormData(form)).toString();
    for (const [k, v] of [...u.searchParams]) if (v === "") u.searchParams.delete(k);
    history.replaceState(null, "", u);
    try { swap(list, await fragment("list")); } catch { /* the next change tries again */ }
  };
  form.addEventListener("input", (e) => {
    clearTimeout(timer);
    timer = setTimeout(apply, e.target.matches("input[type=text], input:not([type])") ? 250 : 0);
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); apply(); });
}

// Keyboard review: j/k move between the calls waiting for a decision, a
// approves the one in focus, r rejects it (its note first, when one is
// typed), o opens its session, ? lists the keys. Never while typing.
function keys() {
  const help = el("div", "keys-help");
  help.id = "keys-help";
  help.setAttribute("role", "dialog");
  help.setAttribute("aria-label", "keyboard shortcuts");
  help.hidden = true;
  help.append(el("p", "", "j / k: next / previous call waiting for a decision · a: approve the one in focus · r: reject it · o: open its session · ?: this help · Esc: close. A note is typed in its field, then sent with Approve or Reject (Enter there decides nothing)."));
  document.body.append(help);
  const items = () => [...document.querySelectorAll("article.approval")];
  const current = () => document.activeElement && document.activeElement.closest("article.approval");
  const focus = (art) => { if (!art) return; art.tabIndex = -1; art.focus(); art.scrollIntoView({ block: "nearest" }); };
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && t.matches && t.matches("input, textarea, select, [contenteditable]")) return;
    const list = items();
    const here = current();
    switch (e.key) {
      case "j": case "k": {
        if (!list.length) return;
        const i = here ? list.indexOf(here) : -1;
        focus(list[e.key === "j" ? Math.min(i + 1, list.length - 1) : Math.max(i - 1, 0)]);
        break;
      }
      case "a": case "r": {
        const art = here; // only the call in focus, never one not looked at
        if (!art) return;
        art.querySelector(`button[value="${e.key === "a" ? "approve" : "reject"}"]`)?.click();
        break;
      }
      case "o": {
        const a = here && here.querySelector("a[href^='/sessions/']");
        if (a) location.href = a.href;
        break;
      }
      case "?":
        help.hidden = !help.hidden;
        break;
      case "Escape":
        help.hidden = true;
        return;
      default:
        return;
    }
    e.preventDefault();
  });
}

// agentsOf shows, in the new-session form, only the chosen project's
// agents (the server checks the pair anyway).
function agentsOf(project, agent) {
  const show = () => {
    for (const o of agent.options) {
      if (!o.dataset.project) continue;
      const mine = o.dataset.project === project.value;
      o.hidden = !mine;
      o.disabled = !mine;
      if (!mine && o.selected) agent.value = "";
    }
  };
  project.addEventListener("change", show);
  show();
}

// A part of a page marked data-live="NAME" is read again every two
// seconds (the sessions list, the inbox: calls waiting, decided
// elsewhere, gone), focus and typing kept.
function livePart(part) {
  setInterval(async () => {
    try { swap(part, await fragment(part.dataset.live)); } catch { /* the next tick tries again */ }
  }, 2000);
}

document.addEventListener("DOMContentLoaded", () => {
  const t = document.getElementById("transcript");
  if (t) transcript(t);
  const c = document.getElementById("composer");
  if (c) composer(c);
  const form = document.getElementById("filters");
  const list = document.getElementById("list");
  if (form && list) filters(form, list);
  for (const part of document.querySelectorAll("[data-live]")) livePart(part);
  const project = document.getElementById("new-project");
  const agent = document.getElementById("new-agent");
  if (project && agent) agentsOf(project, agent);
  keys();
});
