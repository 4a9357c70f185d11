// hebictl panel: the browser side. No libraries: a WebSocket to the panel server and a 2D canvas
// with a small perspective camera. The dead-man rule lives here: jog samples are sent only while a
// jog button or key is physically held (pointer/key down), and stop on release, blur, tab hide or
// page close. The server forwards each sample once; it never keeps a jog alive on its own.
"use strict";

const $ = (id) => document.getElementById(id);
const S = {
  ws: null, arms: [], arm: null, desc: null, frame: null, allowed: {}, jogPeriod: 40,
  held: null, timer: null, target: null, sliders: [], slidersDirty: false,
  cam: { yaw: 0.8, pitch: 0.45, dist: 1.6, center: [0.2, 0, 0.15] },
  sentLog: [],   // browser timestamps of jog samples (the e2e test reads them)
  schemas: null, // hebictl.teleop.state_schema.SCHEMAS, sent by the server in "hello"
  invalid: 0,    // messages this page dropped because they failed the schema
  refusals: {},  // arm -> the operator's latest mode refused "group_hold" (shown in the group banner while held)
  sent: {},      // per command name, the panel's last "sent" (its arrival and PUBACK times: the timing tests read them)
};
window.panelState = S;

const KEYS = ["KeyQ", "KeyA", "KeyW", "KeyS", "KeyE", "KeyD", "KeyR", "KeyF", "KeyT", "KeyG", "KeyY", "KeyH", "KeyU", "KeyJ"];
const CART = ["x", "y", "z", "rx", "ry", "rz"];

// wall clock [s]: what the arm's freshness check and the panel's ping/pong offset are about
function now() { return Date.now() / 1000; }
// The e-stop goes first: everything else waits while the socket still has unsent data, so an
// e-stop never queues behind a backlog of jog samples or slider updates on a slow link.
const PRIORITY = (msg) => msg.t === "cmd" && msg.name === "estop";
function send(msg) {
  if (!S.ws || S.ws.readyState !== 1) return;
  if (!PRIORITY(msg) && S.ws.bufferedAmount > 16384) return;
  S.ws.send(JSON.stringify(msg));
}
function cmd(name, body) { send({ t: "cmd", name, body: body || {} }); }
function fmt(x, n = 3) { return x === null || x === undefined ? "–" : (typeof x === "number" ? x.toFixed(n) : String(x)); }
function toast(text, cls, offer) {
  const el = document.createElement("div");
  el.className = "toast " + (cls || "");
  el.textContent = text;
  if (offer && typeof offer.duration === "number") {   // the shortest allowed duration, one click away
    const b = document.createElement("button");
    b.textContent = `Use ${offer.duration.toFixed(2)} s`;
    b.className = "offer";
    b.addEventListener("click", () => { $("duration").value = offer.duration.toFixed(2); el.remove(); $("go").click(); });
    el.appendChild(b);
  }
  $("toasts").appendChild(el);
  setTimeout(() => el.remove(), 6000);
  while ($("toasts").children.length > 6) $("toasts").firstChild.remove();
}

// ------------------------------------------------------------------ connection
// The sign-in link hands this page a key in the URL's fragment (never sent to a server). It is kept
// in this origin's localStorage, which a page on another port cannot read (the cookie, which every
// port of this host receives, is not enough without it), and sent as the socket's first message.
const KEY_ITEM = "hebictl-panel-key";
function takeKey() {
  const m = /^#k=([A-Za-z0-9_-]{16,128})$/.exec(location.hash);
  if (m) {
    try { localStorage.setItem(KEY_ITEM, m[1]); } catch (e) { S.key = m[1]; }
    history.replaceState(null, "", location.pathname);   // the key leaves the address bar
  }
}
function key() { try { return localStorage.getItem(KEY_ITEM) || S.key; } catch (e) { return S.key; } }
takeKey();
function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  S.ws = ws;
  ws.onopen = () => {
    ws.send(JSON.stringify({ t: "auth", k: key() || "" }));   // first, before anything else
    $("conn").textContent = "panel connected"; $("conn").className = "pill ok"; if (S.arm) send({ t: "select", arm: S.arm }); sendView();
  };
  ws.onclose = (ev) => {
    stopJog(false);
    $("conn").textContent = (ev.code === 1006 || ev.code === 1008) && !S.hello ? "not signed in: open the link hebictl panel printed" : "panel disconnected";
    $("conn").className = "pill bad";
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => {
    // nothing that arrives may stop this page: a message that cannot be handled is dropped and counted
    try { onMessage(JSON.parse(ev.data)); } catch (e) { dropped("page", String(e)); }
  };
}

// ------------------------------------------------------------------ validation (mirror of state_schema.check)
const TYPES = {
  null: (v) => v === null, boolean: (v) => typeof v === "boolean",
  integer: (v) => Number.isInteger(v) && Math.abs(v) < 2 ** 63, number: (v) => typeof v === "number" && isFinite(v),
  string: (v) => typeof v === "string", array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
};
function check(v, sc, path) {
  const types = [].concat(sc.type || []);
  const kind = types.find((t) => TYPES[t](v));
  if (kind === undefined) throw new Error(`${path || "payload"}: expected ${types.join(" or ")}`);
  if (kind === "number" || kind === "integer") {
    if (sc.minimum !== undefined && v < sc.minimum) throw new Error(`${path}: below minimum`);
    if (sc.maximum !== undefined && v > sc.maximum) throw new Error(`${path}: above maximum`);
  } else if (kind === "string") {
    if (sc.maxLength !== undefined && v.length > sc.maxLength) throw new Error(`${path}: too long`);
    if (sc.enum && !sc.enum.includes(v)) throw new Error(`${path}: not one of ${sc.enum}`);
    if (sc.pattern && !new RegExp(sc.pattern).test(v)) throw new Error(`${path}: bad pattern`);
  } else if (kind === "array") {
    if (v.length < (sc.minItems || 0) || v.length > (sc.maxItems ?? Infinity)) throw new Error(`${path}: ${v.length} items`);
    if (sc.items) v.forEach((x, i) => check(x, sc.items, `${path}[${i}]`));
  } else if (kind === "object") {
    for (const k of sc.required || []) if (!(k in v)) throw new Error(`${path}: missing ${k}`);
    for (const [k, x] of Object.entries(v)) {
      const sub = (sc.properties || {})[k] || sc.additionalProperties;
      if (sub) check(x, sub, path ? `${path}.${k}` : k);
    }
  }
  return v;
}
const NUMS = { type: "array", items: { type: ["number", "null"] }, maxItems: 4096 };
const FRAME = { type: "object", required: ["arm", "q"], properties: {
  arm: { type: "string", maxLength: 64 }, q: NUMS, writable: { type: ["boolean", "null"] },
  segs: { type: "array", items: NUMS, maxItems: 512 }, pts: { type: "array", items: NUMS, maxItems: 512 },
  ee: { type: "array", items: NUMS, maxItems: 3 },
  shapes: { type: "array", maxItems: 256, items: { type: "object", required: ["k", "s", "T"], properties: {
    k: { type: "string", enum: ["capsule", "box", "sphere", "cylinder"] }, s: { type: "array", items: { type: "number" }, maxItems: 3 },
    T: { type: "array", items: { type: "array", items: { type: "number" }, minItems: 4, maxItems: 4 }, minItems: 3, maxItems: 3 } } } },
  others: { type: "array", maxItems: 16, items: { type: "object", required: ["arm", "segs"], properties: {
    arm: { type: "string", maxLength: 64 }, segs: { type: "array", items: NUMS, maxItems: 512 }, pts: { type: "array", items: NUMS, maxItems: 512 },
    base: { type: "array", items: { type: "number" }, minItems: 3, maxItems: 3 }, estop: { type: "boolean" }, held: { type: "boolean" },
    offline: { type: "boolean" } } } },
  events: { type: "array", maxItems: 50, items: { type: "object", required: ["text"], properties: {
    level: { type: "string", maxLength: 10 }, text: { type: "string", maxLength: 200 }, detail: { type: ["string", "null"], maxLength: 2000 } } } },
} };
// the overview (hebictl/panel/groups.py): every arm's card and the confirmed groups, built by the panel server from
// validated statuses; checked again here, and shown as text only
const ID = { type: "string", maxLength: 64 };
const TXT = { type: ["string", "null"], maxLength: 2000 };
const ARMS = { type: "object", required: ["arms"], properties: {
  arms: { type: "array", maxItems: 4096, items: { type: "object", required: ["id"], properties: {
    id: ID, status: TXT, state: TXT, mode: TXT, backend: TXT, config: TXT, held_by: TXT, held_words: TXT,
    offline: { type: "boolean" }, stale: { type: "boolean" }, estop: { type: "boolean" }, held: { type: "boolean" },
    group: { type: ["object", "null"], properties: { arms: { type: "array", items: ID, maxItems: 16 } } },
    refusal: { type: ["object", "null"], properties: { topic: TXT, detail: TXT } } } } },
  groups: { type: "array", maxItems: 4096, items: { type: "object", required: ["arms"], properties: {
    arms: { type: "array", items: ID, minItems: 1, maxItems: 16 }, held: { type: "boolean" }, by: TXT, cause: TXT, words: TXT } } },
} };
function valid(kind, v) {
  const sc = kind === "frame" ? FRAME : kind === "arms" ? ARMS : (S.schemas || {})[kind];
  if (!sc) return true;
  try { check(v, sc, ""); return true; } catch (e) { dropped(kind, e.message); return false; }
}
function dropped(kind, why) {
  S.invalid++;
  S.lastInvalid = { kind, why, at: now() };
  console.warn(`panel: dropped an invalid ${kind} message: ${why}`);
}

function onMessage(m) {
  switch (m.t) {
    case "hello": S.hello = m; S.schemas = m.schemas; S.jogPeriod = m.jog_period_ms; document.title = `hebictl panel – ${m.broker}`; break;
    case "ping": send({ t: "pong", s: m.s, c: now() }); break;
    case "arms": if (valid("arms", m)) onArms(m); break;
    case "description": if (m.arm === S.arm && valid("description", m.d)) onDescription(m.d); break;
    case "frame": {
      const s = m.s;
      if (!s || typeof s !== "object" || !valid("frame", s) || s.arm !== S.arm) { if (!s || typeof s !== "object") dropped("frame", "no body"); break; }
      if (s.status && !valid("status", s.status)) break;
      if (s.joints && !valid("joints", s.joints)) break;
      if (s.ee_pose && !valid("ee_pose", s.ee_pose)) break;
      onFrame({ ...s, ...(m.me || {}) });
      break;
    }
    case "ack": {
      const { t, arm, offer, ...ack } = m;
      if (!valid("ack", ack)) break;
      onAck(m);
      break;
    }
    case "notice": toast(String(m.text), m.level, m.offer); break;
    case "sent": if (typeof m.name === "string") S.sent[m.name] = m; break;   // the command's times in the panel
    default: dropped("message", `unknown type ${String(m && m.t).slice(0, 20)}`);
  }
}

function onAck(m) {
  const what = m.topic === "estop" ? "e-stop" : m.topic;
  if (!m.accepted && m.reason === "group_hold") S.refusals[m.arm] = { topic: m.topic, detail: m.detail || "" };
  if (m.accepted) toast(`${m.arm}: ${what} accepted${m.detail ? " – " + m.detail : ""}`, m.topic === "estop" ? "estop" : "accepted");
  else toast(`${m.arm}: ${what} refused: ${REASONS[m.reason] || m.reason}${m.detail ? " – " + m.detail : ""}`, "rejected", m.offer);
}
const REASONS = { too_fast: "too fast for the arm", out_of_limits: "outside the joint limits", stopped: "the arm is stopped: choose a mode first",
  estop_engaged: "the e-stop is engaged", stale: "arrived too late (check the clocks)", rate_limited: "too many commands", out_of_order: "out of order",
  group_hold: "held by the group (another arm of it holds them all)" };

function onArms(m) {
  if (!Array.isArray(m.arms)) { dropped("arms", "not a list"); return; }
  S.arms = m.arms;
  const warn = $("warnings");
  const text = (m.warnings || []).join("\n");
  if (warn.textContent !== text) { warn.textContent = text; warn.hidden = !text; }
  const sel = $("arm");
  const ids = m.arms.map((a) => a.id).join(",");
  if (sel.dataset.ids !== ids) {
    sel.dataset.ids = ids;
    sel.innerHTML = "";
    for (const a of m.arms) {
      const o = document.createElement("option");
      o.value = a.id;
      sel.appendChild(o);
    }
    if (S.arm) sel.value = S.arm;   // rebuilding the list must not show another arm than the one selected
  }
  for (const o of sel.options) {
    const a = m.arms.find((x) => x.id === o.value);
    o.textContent = armWords(a);
  }
  showOverview(m);
  if (!S.arm && m.arms.length) select(m.arms[0].id);
  if (!m.connected) { $("conn").textContent = "broker unreachable"; $("conn").className = "pill bad"; }
  else if (S.ws && S.ws.readyState === 1) { $("conn").textContent = "broker connected"; $("conn").className = "pill ok"; }
}

// one arm in a line for the selector: "left (online, sim, left.cfg.yaml) – position · running · HELD by right"
function armWords(a) {
  const link = a.offline ? "offline" : (a.stale ? "STALE" : (a.status || "?"));
  const where = `${a.id} (${link}${a.backend ? ", " + a.backend : ""}${a.config ? ", " + a.config : ""})`;
  if (a.offline) return where;
  const flags = [a.estop ? "E-STOP" : "", a.m_stopped ? "M-STOP" : "",
    a.held ? (a.held_by === a.id ? "HOLDS ITS GROUP" : `HELD by ${a.held_by || "the group"}`) : ""].filter(Boolean);
  return `${where} – ${[a.mode || "–", a.state || "–", ...flags].join(" · ")}`;
}
// every arm at a glance, the arms of one group (one process, one supervisor) in one box; a click selects
function showOverview(m) {
  S.armsMsg = m;
  const key = JSON.stringify([m.arms, m.groups, S.arm]);
  if (key === S.overviewKey) return;
  S.overviewKey = key;
  const box = $("overview");
  box.textContent = "";
  const byId = new Map(m.arms.map((a) => [a.id, a]));
  const placed = new Set();
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  function card(a) {
    const c = el("button", "card");
    c.dataset.arm = a.id;
    // "is-" classes: the page's own button classes (held: a jog button pressed; estop: the big button) differ
    c.classList.toggle("is-selected", a.id === S.arm);
    c.classList.toggle("is-offline", !!a.offline);
    c.classList.toggle("is-stale", !!a.stale && !a.offline);
    c.classList.toggle("is-estop", !!a.estop);
    c.classList.toggle("is-held", !!a.held && !a.estop);
    c.appendChild(el("span", "name", a.id));
    c.appendChild(el("span", "link", a.offline ? "OFFLINE" : (a.stale ? "STALE: no fresh data" : "online")));
    if (!a.offline) c.appendChild(el("span", "mode", `mode ${a.mode || "–"} · ${a.state || "–"}`));
    const flags = [];
    if (a.estop) flags.push("E-STOP ENGAGED");
    if (a.m_stopped) flags.push("M-STOP");
    if (a.held) flags.push(a.held_by === a.id ? `HOLDS ITS GROUP: ${a.held_words || ""}` : `HELD by the group: ${a.held_words || ""}`);
    if (a.refusal) flags.push(`refused ${a.refusal.topic} (group_hold)`);
    if (a.group_unconfirmed) flags.push("group not confirmed by its members");
    for (const f of flags) c.appendChild(el("span", "flag", f));
    c.title = a.group && a.group.arms ? `group: ${a.group.arms.join(", ")}` : "not in a group";
    c.addEventListener("click", () => select(a.id));
    return c;
  }
  for (const g of m.groups || []) {
    const gel = el("div", "group" + (g.held ? " held" : ""));
    gel.dataset.group = g.arms.join(",");
    gel.appendChild(el("span", "gtitle", `group (one process, one supervisor): ${g.arms.join(" + ")}${g.held ? " – HELD: " + (g.words || "") : ""}`));
    for (const id of g.arms) { const a = byId.get(id); if (a) { gel.appendChild(card(a)); placed.add(id); } }
    box.appendChild(gel);
  }
  const rest = m.arms.filter((a) => !placed.has(a.id));
  if (rest.length) { const gel = el("div", "group solo"); for (const a of rest) gel.appendChild(card(a)); box.appendChild(gel); }
  box.hidden = !m.arms.length;
}

function select(id) {
  stopJog(true);
  mioActive(false); buildMobileIO(null);
  S.arm = id; S.desc = null; S.frame = null; S.target = null; S.targetDirty = false; S.slidersDirty = false;
  $("jog").innerHTML = ""; $("sliders").innerHTML = ""; S.sliders = [];   // the new arm's come with its description
  $("arm").value = id;
  send({ t: "select", arm: id });
  if (S.armsMsg) showOverview(S.armsMsg);   // the selected card at once
}
$("arm").addEventListener("change", (e) => select(e.target.value));

// ------------------------------------------------------------------ description -> controls
function onDescription(d) {
  S.desc = d;
  S.dirty = true;
  buildMobileIO(d.mobile_io);
  buildJogTable();
  const t = $("sliders");
  t.innerHTML = "";
  S.sliders = [];
  d.joints.names.forEach((name, i) => {
    const tr = t.insertRow();
    tr.insertCell().textContent = name;
    const r = document.createElement("input");
    // step "any": a range input snaps its value to its step, so a synced slider would hold the joint
    // rounded to 1 mrad and "Go" after moving one slider would nudge every other joint too
    r.type = "range"; r.step = "any"; r.id = `slider${i}`;
    r.min = d.joints.position_min[i] ?? -Math.PI; r.max = d.joints.position_max[i] ?? Math.PI;
    r.addEventListener("input", () => { S.slidersDirty = true; updateGhost(); });
    tr.insertCell().appendChild(r);
    const v = tr.insertCell(); v.className = "val";
    S.sliders.push({ input: r, val: v });
  });
}

function buildJogTable() {
  const t = $("jog");
  t.innerHTML = "";
  const cart = jogSpace() === "cartesian";
  const labels = cart ? CART : (S.desc ? S.desc.joints.names : []);
  labels.forEach((name, i) => {
    const tr = t.insertRow();
    tr.insertCell().textContent = name;
    for (const dir of [-1, 1]) {
      const b = document.createElement("button");
      b.textContent = dir < 0 ? "−" : "+";
      b.id = `jog_${i}_${dir < 0 ? "minus" : "plus"}`;
      b.dataset.ctl = "jog";
      b.disabled = !S.allowed.jog;
      b.title = KEYS[2 * i + (dir < 0 ? 1 : 0)] ? `hold (key ${KEYS[2 * i + (dir < 0 ? 1 : 0)].slice(3)})` : "hold";
      b.addEventListener("pointerdown", (e) => { b.setPointerCapture(e.pointerId); startJog(i, dir, b); });
      for (const ev of ["pointerup", "pointercancel", "lostpointercapture"]) b.addEventListener(ev, () => stopJog(true));
      tr.insertCell().appendChild(b);
    }
    const v = tr.insertCell(); v.className = "val"; v.id = `jogval${i}`;
  });
}
function jogSpace() { return document.querySelector("input[name=space]:checked").value; }
for (const r of document.querySelectorAll("input[name=space]")) r.addEventListener("change", () => { stopJog(true); buildJogTable(); });

// ------------------------------------------------------------------ hold-to-jog (dead-man)
function jogSample() {
  if (!S.held) return;
  if (!S.allowed.jog) { stopJog(true); return; }
  const c = now();
  S.sentLog.push(c);
  if (S.sentLog.length > 5000) S.sentLog.shift();
  send({ t: "jog", space: S.held.space, axis: S.held.axis, dir: S.held.dir, speed: parseFloat($("speed").value), c });
}
function startJog(axis, dir, button, key) {
  if (!S.allowed.jog) return;
  stopJog(false);
  S.held = { axis, dir, space: jogSpace(), button, key };
  if (button) button.classList.add("held");
  jogSample();
  S.timer = setInterval(jogSample, S.jogPeriod);
}
function stopJog(sendRelease) {
  if (S.timer) clearInterval(S.timer);
  S.timer = null;
  if (S.held) {
    if (S.held.button) S.held.button.classList.remove("held");
    S.held = null;
    if (sendRelease) send({ t: "jog_release" });
  }
}
window.addEventListener("blur", () => stopJog(true));
document.addEventListener("visibilitychange", () => { if (document.hidden) stopJog(true); });
window.addEventListener("pagehide", () => stopJog(true));

document.addEventListener("keydown", (e) => {
  if (e.code === "Space") { e.preventDefault(); if (!e.repeat) estop(); return; }
  if (e.code === "Escape") { e.preventDefault(); stopJog(true); if (S.allowed.stop) cmd("stop"); return; }
  if (e.target.tagName === "INPUT" && e.target.type === "number") return;
  const k = KEYS.indexOf(e.code);
  if (k < 0) return;
  e.preventDefault();
  if (e.repeat || (S.held && S.held.key === e.code)) return;
  const axis = k >> 1, dir = k % 2 === 0 ? 1 : -1;
  const n = jogSpace() === "cartesian" ? 6 : (S.desc ? S.desc.dof : 0);
  if (axis < n) startJog(axis, dir, $(`jog_${axis}_${dir < 0 ? "minus" : "plus"}`), e.code);
});
document.addEventListener("keyup", (e) => { if (S.held && S.held.key === e.code) stopJog(true); });

// ------------------------------------------------------------------ buttons
function estop() { S.estopAt = now(); cmd("estop", { engaged: true }); stopJog(false); }
$("estop").addEventListener("pointerdown", estop);   // on press, not on release: no click delay
$("estop").addEventListener("click", (e) => { if (e.detail === 0) estop(); });  // keyboard-activated
$("estop").addEventListener("keydown", (e) => { if (e.code === "Space") e.preventDefault(); });
$("estop_release").addEventListener("click", () => cmd("estop", { engaged: false }));
$("stop").addEventListener("click", () => { stopJog(true); cmd("stop"); });
$("home").addEventListener("click", () => cmd("home"));
$("grip_open").addEventListener("click", () => cmd("gripper", { action: "open" }));
$("grip_close").addEventListener("click", () => cmd("gripper", { action: "close" }));
for (const b of document.querySelectorAll("#modes button")) b.addEventListener("click", () => cmd("mode", { mode: b.dataset.mode }));
$("sync").addEventListener("click", () => { S.slidersDirty = false; syncSliders(true); });
$("go").addEventListener("click", () => {
  const d = parseFloat($("duration").value);
  cmd("joint_goal", { positions: S.sliders.map((s) => parseFloat(s.input.value)), duration: isFinite(d) ? d : null });
});
$("tsync").addEventListener("click", () => { S.target = null; S.targetDirty = false; syncTarget(); });
$("tgo").addEventListener("click", () => {
  const d = parseFloat($("duration").value);
  const body = { position: S.target, duration: isFinite(d) ? d : null };
  if (S.frame && S.frame.ee_pose && S.frame.ee_pose.orientation) body.orientation = S.frame.ee_pose.orientation;
  cmd("cartesian_goal", body);
});
for (const [i, id] of ["tx", "ty", "tz"].entries()) {
  $(id).addEventListener("change", () => { if (S.target) { S.target[i] = parseFloat($(id).value); S.targetDirty = true; } });
}

function syncSliders(force) {
  if (!S.frame || !S.sliders.length) return;
  S.frame.q.forEach((q, i) => {
    const s = S.sliders[i];
    if (!s) return;
    if (force || !S.slidersDirty) s.input.value = q;
    s.val.textContent = fmt(parseFloat(s.input.value));
  });
  updateGhost();
}
function updateGhost() {
  send({ t: "ghost", q: S.slidersDirty ? S.sliders.map((s) => parseFloat(s.input.value)) : null });
}
function syncTarget() {
  // the target follows the end effector until the operator drags it or types a coordinate
  if ((!S.target || !S.targetDirty) && S.frame && S.frame.ee) S.target = S.frame.ee.map((r) => r[3]);
  if (S.target && document.activeElement.type !== "number") ["tx", "ty", "tz"].forEach((id, i) => { $(id).value = S.target[i].toFixed(3); });
}

// ------------------------------------------------------------------ frames
function onFrame(f) {
  S.frame = f;
  S.frames = (S.frames || 0) + 1;
  S.allowed = f.allowed || {};
  const st = f.status || {};
  $("readonly").hidden = f.writable !== false;
  for (const el of document.querySelectorAll("[data-ctl]")) el.disabled = !S.allowed[el.dataset.ctl];
  for (const b of document.querySelectorAll("#modes button")) b.classList.toggle("active", b.dataset.mode === st.mode);
  showMobileIO(st.app);
  $("estop").classList.toggle("engaged", !!st.estop);
  showBanner(f);
  showGroupBanner(f);
  if (S.held && !S.allowed.jog) stopJog(true);
  const loop = st.loop || {};
  const err = st.last_error;
  const grip = st.gripper;
  const rows = [
    ["arm", f.arm], ["status", st.status], ["state", st.state], ["mode", st.mode], ["arm mode", st.arm_mode || "–"],
    ["e-stop", st.estop ? "ENGAGED" : "released"], ["M-stop", st.m_stopped === undefined ? "–" : (st.m_stopped ? "PRESSED" : "released")],
    ["stop", st.stop_behaviour || "–"],
    ["jogging", `${st.jogging ? "yes" : "no"}${st.braking ? " (braking)" : ""}`],
    ["goal", `${fmt(st.goal_progress, 2)}${st.at_goal ? " at goal" : ""}${st.goal_status && !st.at_goal && st.goal_status !== "no goal" ? ` – ${st.goal_status}` : ""}`],
    ["payload", st.payload ? `about ${fmt(st.payload.mass_kg, 2)} kg at the end effector (${fmt(st.payload.extra_mass_kg, 2)} kg not in the model)` : "–"],
    ["commands", st.commands_delivered === false ? "NOT DELIVERED to the modules (command_lost)" : (st.commands_delivered ? "delivered" : "–")],
    ["loop", loop.period_p50 !== undefined ? `period p50/p99 ${fmt(loop.period_p50 * 1e3, 1)}/${fmt(loop.period_p99 * 1e3, 1)} ms, work p99 ${fmt(loop.work_p99 * 1e3, 1)} ms, overruns ${fmt(loop.overruns, 0)}` : "–"],
    ["last error", err ? `${err.reason}: ${err.detail}` : "–"],
    ["group", st.group ? `${st.group.arms.join(", ")}${st.group.held ? " – held: " + groupWords(st.group) : " – not held"}` : "–"],
    ["gripper", grip ? Object.entries(grip).filter(([k, v]) => v !== null && !["seq", "client", "time"].includes(k)).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(", ") : "–"],
    ["account", f.writable === false ? "read-only" : (f.writable ? "may command" : "probing…")],
  ];
  const key = JSON.stringify([rows, f.events]);
  if (key === S.statusKey) return finishFrame(f);
  S.statusKey = key;
  const t = $("status");
  if (t.rows.length !== rows.length) { t.innerHTML = ""; rows.forEach(() => { const r = t.insertRow(); r.insertCell(); r.insertCell(); }); }
  rows.forEach(([k, v], i) => { t.rows[i].cells[0].textContent = k; t.rows[i].cells[1].textContent = v ?? "–"; t.rows[i].id = `st_${k.replace(/[^a-z]/g, "")}`; });
  const ev = $("events");
  ev.textContent = "";
  for (const e of f.events || []) {   // plain words from hebictl/panel/events.py; text only, never HTML
    const li = document.createElement("li");
    li.className = `ev-${e.level || "info"}`;
    li.textContent = `${typeof e.ts === "number" ? new Date(e.ts * 1000).toLocaleTimeString() + " " : ""}${e.text}${e.detail ? " – " + e.detail : ""}`;
    ev.appendChild(li);
  }
  finishFrame(f);
}
function finishFrame(f) {
  if (jogSpace() === "joint") f.q.forEach((q, i) => { const el = $(`jogval${i}`); if (el) el.textContent = fmt(q); });
  else if (f.ee_pose && f.ee_pose.position) f.ee_pose.position.forEach((p, i) => { const el = $(`jogval${i}`); if (el) el.textContent = fmt(p); });
  syncSliders(false);
  syncTarget();
  S.dirty = true;
}

// the big banner: e-stop (red), offline / stale (grey), data invalid, unverified description
function showBanner(f) {
  const st = f.status || {}, h = f.health || {};
  const b = $("banner");
  let text = "", cls = "";
  if (st.estop) {
    text = "E-STOP ENGAGED – the arm is stopped. Release it only when it is safe" + (f.allowed && f.allowed.estop_release ? " (Release e-stop)" : (f.estop_owner === false && f.writable ? "; another operator engaged it" : ""));
    cls = "estop";
  } else if (h.offline) { text = `OFFLINE – ${f.arm} is not connected (last known state shown greyed)`; cls = "offline"; }
  else if (h.stale) { text = h.age === null || h.age === undefined ? `STALE – no valid data from ${f.arm} yet` : `STALE – no data from ${f.arm} for ${h.age.toFixed(1)} s`; cls = "offline"; }
  const inv = h.invalid_recent || (S.lastInvalid && now() - S.lastInvalid.at < 5 ? { topic: S.lastInvalid.kind, reason: S.lastInvalid.why } : null);
  const extra = [];
  if (inv) extra.push(`DATA INVALID: dropped a message on ${inv.topic}: ${inv.reason}${inv.detail ? " (" + inv.detail + ")" : ""}`);
  if (h.description_refused) extra.push(`DESCRIPTION REFUSED: ${h.description_refused}`);
  $("datawarn").textContent = extra.join("\n");
  $("datawarn").hidden = !extra.length;
  if (b.textContent !== text) b.textContent = text;
  b.className = cls;
  b.hidden = !text;
  document.body.classList.toggle("greyed", !!(h.offline || h.stale));
}

// What holds the group, in words (a mirror of hebictl/panel/groups.py group_words)
function groupWords(g) {
  if (!g || !g.held) return "";
  const cause = String(g.cause || "");
  if (!g.by) return cause ? `every arm stopped (${cause})` : "every arm stopped";
  if (cause.includes("e-stop") || cause.startsWith("estop")) return `${g.by} e-stopped`;
  return cause ? `${g.by} stopped: ${cause}` : `${g.by} stopped`;
}
// the group banner: the selected arm is held because an arm of its group (maybe itself) holds them all,
// which arm and why, how each arm resumes, and a "group_hold" refusal of its mode while the cause holds
function showGroupBanner(f) {
  const g = (f.status || {}).group, b = $("groupbanner");
  const held = !!(g && g.held && !(f.health || {}).offline);
  if (!held) delete S.refusals[f.arm];
  const key = held ? JSON.stringify([f.arm, g, S.refusals[f.arm], (S.arms.find((a) => a.id === f.arm) || {}).refusal]) : "";
  if (key === S.groupKey) return;
  S.groupKey = key;
  b.textContent = "";
  b.hidden = !held;
  if (!held) return;
  const words = groupWords(g), cause = g.cause ? `: ${g.cause}` : "";
  const line = (cls, text) => { const e = document.createElement("span"); e.className = cls; e.textContent = text; b.appendChild(e); };
  if (g.by === f.arm) {
    line("what", `THIS ARM HOLDS ITS GROUP (${g.arms.join(", ")}): ${words}`);
    if (cause) line("cause", `cause${cause}`);
    line("resume", `Resume: clear it here (release the e-stop, set a mode); then each other arm of the group resumes with its own mode.`);
  } else if (g.by) {
    line("what", `HELD BY THE GROUP: ${words}`);
    if (cause) line("cause", `cause${cause}`);
    line("resume", `Resume: clear ${g.by} first (release its e-stop, set its mode); then set this arm's mode. Until then this arm refuses every mode but idle (group_hold).`);
  } else {
    line("what", `HELD BY THE GROUP: ${words}`);
    line("resume", "Resume: set this arm's mode once its teleop runs again.");
  }
  const r = S.refusals[f.arm] || (S.arms.find((a) => a.id === f.arm) || {}).refusal;
  if (r) line("refusal", `REFUSED (group_hold): cmd/${r.topic} – ${r.detail}`);
}

// ------------------------------------------------------------------ 3D view (canvas, z up)
const canvas = $("view");
const ctx = canvas.getContext("2d");
function camBasis() {
  const { yaw, pitch } = S.cam;
  const fwd = [-Math.cos(pitch) * Math.cos(yaw), -Math.cos(pitch) * Math.sin(yaw), -Math.sin(pitch)];
  const right = [-Math.sin(yaw), Math.cos(yaw), 0];   // fwd x z: right-handed view, z up on screen
  const up = [right[1] * fwd[2] - right[2] * fwd[1], right[2] * fwd[0] - right[0] * fwd[2], right[0] * fwd[1] - right[1] * fwd[0]];
  const c = S.cam.center;
  const eye = [c[0] - fwd[0] * S.cam.dist, c[1] - fwd[1] * S.cam.dist, c[2] - fwd[2] * S.cam.dist];
  return { fwd, right, up, eye };
}
function project(p, B) {
  const d = [p[0] - B.eye[0], p[1] - B.eye[1], p[2] - B.eye[2]];
  const z = d[0] * B.fwd[0] + d[1] * B.fwd[1] + d[2] * B.fwd[2];
  const x = d[0] * B.right[0] + d[1] * B.right[1] + d[2] * B.right[2];
  const y = d[0] * B.up[0] + d[1] * B.up[1] + d[2] * B.up[2];
  const f = canvas.height * 1.2;
  return [canvas.width / 2 + (f * x) / Math.max(z, 1e-3), canvas.height / 2 - (f * y) / Math.max(z, 1e-3), z];
}
function line(a, b, B, color, width, dash) {
  const p = project(a, B), q = project(b, B);
  ctx.strokeStyle = color; ctx.lineWidth = width; ctx.setLineDash(dash || []);
  ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
}
function dot(p, B, color, r) {
  const s = project(p, B);
  ctx.fillStyle = color; ctx.beginPath(); ctx.arc(s[0], s[1], r, 0, 2 * Math.PI); ctx.fill();
  return s;
}
function triad(R, B, len, width, alpha) {
  const o = [R[0][3], R[1][3], R[2][3]];
  const cols = [`rgba(220,38,38,${alpha})`, `rgba(22,163,74,${alpha})`, `rgba(37,99,235,${alpha})`];
  for (let k = 0; k < 3; k++) line(o, [o[0] + len * R[0][k], o[1] + len * R[1][k], o[2] + len * R[2][k]], B, cols[k], width);
}
// ------------------------------------------------------------------ workspace and collision shapes
// The config's workspace (state/description "workspace", validated like the rest of it) drawn
// semi-transparent: the table in a wood colour, solid objects grey, walls pale yellow, keep-out
// zones in a warning orange; the arm's collision shapes (a toggle) pale blue. A pose is 4x4 (or
// 3x4) row-major: column k of its rotation is the shape's local axis k, a plane's normal is z.
const WS_COLORS = {
  table: ["rgba(180,140,90,0.35)", "rgba(140,100,60,0.6)"], box: ["rgba(100,116,139,0.30)", "rgba(71,85,105,0.8)"],
  cylinder: ["rgba(100,116,139,0.30)", "rgba(71,85,105,0.8)"], wall: ["rgba(234,179,8,0.18)", "rgba(202,138,4,0.7)"],
  keep_out: ["rgba(234,88,12,0.30)", "rgba(234,88,12,0.95)"],
};
const SHAPE_COLORS = ["rgba(37,99,235,0.18)", "rgba(37,99,235,0.55)"];
function tp(T, x, y, z) {   // the point (x, y, z) of a shape's frame, in the world
  return [0, 1, 2].map((r) => T[r][0] * x + T[r][1] * y + T[r][2] * z + T[r][3]);
}
function poly(pts, B, fill, stroke) {
  const q = pts.map((p) => project(p, B));
  ctx.setLineDash([]);
  ctx.beginPath(); ctx.moveTo(q[0][0], q[0][1]);
  for (const p of q.slice(1)) ctx.lineTo(p[0], p[1]);
  ctx.closePath();
  ctx.fillStyle = fill; ctx.fill();
  if (stroke) { ctx.strokeStyle = stroke; ctx.lineWidth = 1.5; ctx.stroke(); }
}
function depth(pts, B) { return pts.reduce((a, p) => a + project(p, B)[2], 0) / pts.length; }
function faces(list, B, fill, stroke) {   // far faces first (painter's order)
  list.sort((a, b) => depth(b, B) - depth(a, B));
  for (const f of list) poly(f, B, fill, stroke);
}
function boxFaces(T, h) {
  const c = (i, j, k) => tp(T, i * h[0], j * h[1], k * h[2]);
  return [[c(-1, -1, -1), c(1, -1, -1), c(1, 1, -1), c(-1, 1, -1)], [c(-1, -1, 1), c(1, -1, 1), c(1, 1, 1), c(-1, 1, 1)],
    [c(-1, -1, -1), c(1, -1, -1), c(1, -1, 1), c(-1, -1, 1)], [c(-1, 1, -1), c(1, 1, -1), c(1, 1, 1), c(-1, 1, 1)],
    [c(-1, -1, -1), c(-1, 1, -1), c(-1, 1, 1), c(-1, -1, 1)], [c(1, -1, -1), c(1, 1, -1), c(1, 1, 1), c(1, -1, 1)]];
}
function cylinderFaces(T, r, h, n = 20) {
  const ring = (z) => Array.from({ length: n }, (_, i) => tp(T, r * Math.cos(2 * Math.PI * i / n), r * Math.sin(2 * Math.PI * i / n), z));
  const lo = ring(-h), hi = ring(h);
  return [lo, hi, ...lo.map((p, i) => [p, lo[(i + 1) % n], hi[(i + 1) % n], hi[i]])];
}
function drawSolid(kind, size, T, B, fill, stroke) {
  if (kind === "box") faces(boxFaces(T, size), B, fill, stroke);
  else if (kind === "cylinder") faces(cylinderFaces(T, size[0], size[1]), B, fill, null);
  else if (kind === "sphere") {
    const c = project(tp(T, 0, 0, 0), B);
    ctx.fillStyle = fill; ctx.beginPath(); ctx.arc(c[0], c[1], canvas.height * 1.2 * size[0] / Math.max(c[2], 1e-3), 0, 2 * Math.PI); ctx.fill();
  } else if (kind === "capsule") {   // a thick line with round ends: a capsule seen from any side
    const a = project(tp(T, 0, 0, -size[1]), B), b = project(tp(T, 0, 0, size[1]), B);
    ctx.strokeStyle = fill; ctx.lineCap = "round"; ctx.setLineDash([]);
    ctx.lineWidth = Math.max(2, 2 * canvas.height * 1.2 * size[0] / Math.max((a[2] + b[2]) / 2, 1e-3));
    ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke(); ctx.lineCap = "butt";
  }
}
function drawWorkspace(B) {
  const ws = S.desc && S.desc.workspace;
  if (!ws || !$("show_ws").checked) return;
  const planes = ws.objects.filter((o) => o.kind === "plane"), solids = ws.objects.filter((o) => o.kind !== "plane");
  for (const o of [...planes, ...solids]) {
    const [fill, stroke] = WS_COLORS[o.type] || WS_COLORS.box;
    if (o.kind === "plane") {   // a plane has no edge: a square around its point (the table under the arm, 1.2 m)
      const h = o.type === "table" ? 0.6 : 0.5;
      poly([tp(o.pose, -h, -h, 0), tp(o.pose, h, -h, 0), tp(o.pose, h, h, 0), tp(o.pose, -h, h, 0)], B, fill, stroke);
    } else drawSolid(o.kind, o.size, o.pose, B, fill, stroke);
    if (o.type !== "table" && o.name) {
      const c = project(tp(o.pose, 0, 0, 0), B);
      ctx.fillStyle = stroke; ctx.font = "11px system-ui, sans-serif"; ctx.fillText(o.name, c[0] + 4, c[1] - 4);
    }
  }
}
function drawShapes(f, B) {
  if (!$("show_shapes").checked) return;
  for (const sh of f.shapes || []) drawSolid(sh.k, sh.s, sh.T, B, SHAPE_COLORS[0], SHAPE_COLORS[1]);
}
for (const id of ["show_ws", "show_shapes"]) $(id).addEventListener("change", () => { S.dirty = true; if (id === "show_shapes") sendView(); });
function sendView() { send({ t: "view", shapes: $("show_shapes").checked }); }

// the other arms of the selected arm's group, where they stand in the shared world frame (seen from this arm's
// base): grey, orange while the group holds them, red when e-stopped, with their names at their bases
function drawOthers(f, B) {
  if ((f.others || []).length) {   // which arm is which: this one's name at its base too
    const c = project([0, 0, 0], B);
    ctx.fillStyle = "#3e4c59"; ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillText(f.arm, c[0] + 6, c[1] + 14);
  }
  for (const o of f.others || []) {
    const color = o.offline ? "rgba(154,165,177,0.5)" : o.estop ? "rgba(197,48,48,0.8)" : o.held ? "rgba(221,107,32,0.8)" : "#9aa5b1";
    for (const s of o.segs) line(s.slice(0, 3), s.slice(3), B, color, 7);
    for (const p of o.pts || []) dot(p, B, "#f5f7fa", 3);
    if (o.base) {
      const c = project(o.base, B);
      ctx.fillStyle = color; ctx.font = "bold 12px system-ui, sans-serif";
      ctx.fillText(`${o.arm}${o.estop ? " (E-STOP)" : o.held ? " (held)" : ""}`, c[0] + 6, c[1] + 14);
    }
  }
}

function draw() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  ctx.clearRect(0, 0, w, h);
  const B = camBasis();
  for (let i = -5; i <= 5; i++) {
    line([i * 0.1, -0.5, 0], [i * 0.1, 0.5, 0], B, "#e4e7eb", 1);
    line([-0.5, i * 0.1, 0], [0.5, i * 0.1, 0], B, "#e4e7eb", 1);
  }
  drawWorkspace(B);
  triad([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], B, 0.1, 2, 0.6);
  const f = S.frame;
  if (!f) return;
  drawOthers(f, B);
  for (const s of (f.ghost && f.ghost.segs) || []) line(s.slice(0, 3), s.slice(3), B, "rgba(43,108,176,0.45)", 6, [6, 4]);
  for (const s of f.segs || []) line(s.slice(0, 3), s.slice(3), B, "#3e4c59", 8);
  for (const p of f.pts || []) dot(p, B, "#f5f7fa", 4);
  drawShapes(f, B);
  if (f.ee) triad(f.ee, B, 0.08, 3, 1.0);
  if (f.ghost && f.ghost.ee) dot(f.ghost.ee, B, "rgba(43,108,176,0.6)", 6);
  if (S.target) S.targetScreen = dot(S.target, B, "rgba(221,107,32,0.85)", 9);
  if (S.mio.phone) {
    const ph = S.mio.phone, R = quatMatrix(ph.q);
    triad([[...R[0], ph.p[0]], [...R[1], ph.p[1]], [...R[2], ph.p[2]]], B, 0.06, 2, 0.9);
    S.mio.phoneScreen = dot(ph.p, B, "rgba(128,90,213,0.9)", 9);
  }
}

let drag = null;
canvas.addEventListener("pointerdown", (e) => {
  canvas.setPointerCapture(e.pointerId);
  const r = canvas.getBoundingClientRect();
  const x = e.clientX - r.left, y = e.clientY - r.top;
  const t = S.targetScreen, ph = S.mio.phone && S.mio.phoneScreen;
  const phone = !!(ph && Math.hypot(ph[0] - x, ph[1] - y) < 14);
  drag = { x: e.clientX, y: e.clientY, phone, target: !phone && !!(t && S.target && Math.hypot(t[0] - x, t[1] - y) < 14) };
});
canvas.addEventListener("pointermove", (e) => {
  if (!drag) return;
  const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
  drag.x = e.clientX; drag.y = e.clientY;
  if (drag.phone) {
    const B = camBasis(), p = S.mio.phone.p;
    const k = project(p, B)[2] / (canvas.height * 1.2);
    for (let i = 0; i < 3; i++) p[i] += e.shiftKey ? -k * dy * B.fwd[i] : k * (dx * B.right[i] - dy * B.up[i]);
  } else if (drag.target) {
    const B = camBasis();
    const depth = project(S.target, B)[2];
    const k = depth / (canvas.height * 1.2);
    for (let i = 0; i < 3; i++) S.target[i] += k * (dx * B.right[i] - dy * B.up[i]);
    S.targetDirty = true;
    ["tx", "ty", "tz"].forEach((id, i) => { $(id).value = S.target[i].toFixed(3); });
  } else {
    S.cam.yaw -= dx * 0.01;
    S.cam.pitch = Math.max(-1.4, Math.min(1.4, S.cam.pitch + dy * 0.01));
  }
  draw();
});
canvas.addEventListener("pointerup", () => { drag = null; });
canvas.addEventListener("wheel", (e) => { e.preventDefault(); S.cam.dist = Math.max(0.3, Math.min(6, S.cam.dist * Math.exp(e.deltaY * 0.001))); draw(); }, { passive: false });
window.addEventListener("resize", draw);
// render at the display's pace (at most once per frame message): the socket handler stays short,
// so a jog sample is never queued behind a drawing
function animate() {
  requestAnimationFrame(animate);   // first: a frame that cannot be drawn must not stop the next one
  if (!S.dirty) return;
  S.dirty = false;
  try { draw(); } catch (e) { dropped("frame", `cannot draw: ${e}`); }
}
requestAnimationFrame(animate);

// ------------------------------------------------------------------ Mobile IO emulator
// The arm's `hebictl teleop --app NAME` names its app and the config's Mobile IO layout (HEBI's widget
// list) in state/description ("mobile_io"); without a layout this draws HEBI's default screen (B1-B8,
// A1-A8). While "emulator on" is ticked and the arm is in mode "app", the page sends one sample (every
// button and axis) each MIO_PERIOD ms through the panel's session, which publishes cmd/input; the arm
// validates it again and runs it through the same guard as a phone. Momentary buttons are down while
// held (pointer or key), toggle buttons flip per press; joysticks spring back to 0, sliders stay.
// Labels come from the layout and are shown as text only.
const MIO_PERIOD = 50;   // ms: 20 samples/s, five per 250 ms command lifetime
const MIO_LED = { red: "#e53e3e", green: "#38a169", blue: "#3182ce", yellow: "#ecc94b", white: "#fff", cyan: "#0bc5ea",
  magenta: "#d53f8c", orange: "#ed8936", transparent: "#52606d" };
const MIO_KEYS = { KeyA: [0, -1], KeyD: [0, 1], KeyS: [1, -1], KeyW: [1, 1], ArrowLeft: [6, -1], ArrowRight: [6, 1], ArrowDown: [7, -1], ArrowUp: [7, 1] };
S.mio = { buttons: [0, 0, 0, 0, 0, 0, 0, 0], axes: [0, 0, 0, 0, 0, 0, 0, 0], modes: {}, widgets: {}, keys: new Set(), timer: null, sent: 0, downAt: [] };
function mioDefault() {   // HEBI's default Mobile IO screen: two joysticks, four sliders, eight buttons
  const w = [{ id: "a1,a2", channels: ["a1", "a2"], type: "joystick", x: -0.72, y: 0.3, width: 0.5, height: 0.62 }];
  for (let i = 3; i <= 6; i++) w.push({ id: `a${i}`, channels: [`a${i}`], type: "slider", x: -0.33 + (i - 3) * 0.22, y: 0.3, width: 0.1, height: 0.6 });
  w.push({ id: "a7,a8", channels: ["a7", "a8"], type: "joystick", x: 0.72, y: 0.3, width: 0.5, height: 0.62 });
  for (let i = 1; i <= 8; i++) w.push({ id: `b${i}`, channels: [`b${i}`], type: "button", x: -0.84 + (i - 1) * 0.24, y: -0.7, width: 0.2, height: 0.2, parameters: { mode: "momentary" } });
  return w;
}
function mioLabel(w) {
  const p = w.parameters || {};
  const t = Array.isArray(p.text) ? p.text.join(" ") : (p.text || p.text2 || p.text1 || "");
  return String(t);
}
function buildMobileIO(mio) {
  S.mio.desc = mio || null;
  mioPose(false);   // another arm, or none: the phone starts again at that arm's end effector
  const box = $("mio"), scr = $("mio_screen");
  const appBtn = document.querySelector("#modes button[data-mode=app]");
  scr.textContent = "";
  S.mio.widgets = {}; S.mio.modes = {};
  S.mio.buttons.fill(0); S.mio.axes.fill(0);
  box.hidden = !mio; appBtn.hidden = !mio;
  if (!mio) return;
  $("mio_app").textContent = `app ${mio.app}${mio.layout ? "" : " (HEBI's default layout)"}`;
  $("mio_text").textContent = mio.text || "";
  const W = 370, H = 250;
  for (const w of mio.layout || mioDefault()) {
    const ch = w.channels || [];
    const el = document.createElement("div");
    el.className = "mio-w";
    el.style.left = `${((w.x ?? 0) + 1) / 2 * W}px`;
    el.style.top = `${(1 - (w.y ?? 0)) / 2 * H}px`;
    const wpx = Math.max(40, (w.width ?? 0.2) / 2 * W), hpx = Math.max(40, (w.height ?? 0.2) / 2 * H);
    const label = mioLabel(w);
    if (ch[0] && ch[0][0] === "b") {
      const i = parseInt(ch[0].slice(1)) - 1;
      const b = document.createElement("button");
      b.className = "mio-btn"; b.id = `mio_${ch[0]}`; b.dataset.ctl = "input";
      b.textContent = label || ch[0].toUpperCase();
      b.title = `${ch[0].toUpperCase()} (key ${i + 1}, ${(w.parameters || {}).mode || "momentary"})`;
      if (label) { const tag = document.createElement("span"); tag.className = "ch"; tag.textContent = ch[0].toUpperCase(); b.appendChild(tag); }
      S.mio.modes[i] = (w.parameters || {}).mode === "toggle" ? "toggle" : "momentary";
      b.addEventListener("pointerdown", (e) => { b.setPointerCapture(e.pointerId); mioPress(i, true); });
      for (const ev of ["pointerup", "pointercancel"]) b.addEventListener(ev, () => mioPress(i, false));
      el.appendChild(b);
      S.mio.widgets[ch[0]] = b;
    } else if (w.type === "joystick" && ch.length === 2) {
      el.classList.add("mio-joy");
      const size = Math.min(wpx, hpx);
      el.style.width = el.style.height = `${size}px`;
      el.id = `mio_${ch[0]}_${ch[1]}`;
      const knob = document.createElement("div"); knob.className = "knob"; el.appendChild(knob);
      const tag = document.createElement("span"); tag.className = "ch"; tag.textContent = `${ch[0].toUpperCase()}/${ch[1].toUpperCase()}${label ? " " + label : ""}`; el.appendChild(tag);
      const ix = parseInt(ch[0].slice(1)) - 1, iy = parseInt(ch[1].slice(1)) - 1;
      const move = (e) => {
        const r = el.getBoundingClientRect();
        let x = (e.clientX - r.left) / r.width * 2 - 1, y = 1 - (e.clientY - r.top) / r.height * 2;
        const n = Math.hypot(x, y); if (n > 1) { x /= n; y /= n; }
        mioAxis(ix, x); mioAxis(iy, y);
      };
      el.addEventListener("pointerdown", (e) => { el.setPointerCapture(e.pointerId); el.dragging = true; move(e); });
      el.addEventListener("pointermove", (e) => { if (el.dragging) move(e); });
      for (const ev of ["pointerup", "pointercancel"]) el.addEventListener(ev, () => { el.dragging = false; mioAxis(ix, 0); mioAxis(iy, 0); });
      S.mio.widgets[ch[0]] = S.mio.widgets[ch[1]] = el;
    } else if (ch[0] && ch[0][0] === "a") {
      const i = parseInt(ch[0].slice(1)) - 1;
      el.classList.add("mio-slider");
      if (hpx > wpx) el.classList.add("vertical");
      el.style.width = `${hpx > wpx ? 28 : wpx}px`; el.style.height = `${hpx > wpx ? hpx : 28}px`;
      const r = document.createElement("input");
      r.type = "range"; r.min = "-1"; r.max = "1"; r.step = "any"; r.value = "0"; r.id = `mio_${ch[0]}`; r.dataset.ctl = "input";
      r.addEventListener("input", () => mioAxis(i, parseFloat(r.value), true));
      const tag = document.createElement("span"); tag.className = "ch"; tag.textContent = `${ch[0].toUpperCase()}${label ? " " + label : ""}`;
      el.appendChild(tag); el.appendChild(r);
      S.mio.widgets[ch[0]] = r;
    } else continue;
    scr.appendChild(el);
  }
}
// a press shorter than two sample periods is held that long: the arm keeps only the newest sample per
// cycle, so a down and an up inside one cycle would be a press nobody saw
const MIO_MIN_PRESS = 2 * MIO_PERIOD;
function mioPress(i, down) {
  if (S.mio.modes[i] === "toggle") { if (down) S.mio.buttons[i] = 1 - S.mio.buttons[i]; }
  else if (down) { S.mio.buttons[i] = 1; S.mio.downAt[i] = performance.now(); }
  else {
    const left = MIO_MIN_PRESS - (performance.now() - (S.mio.downAt[i] || 0));
    if (left > 0) { setTimeout(() => mioPress(i, false), left); return; }
    S.mio.buttons[i] = 0;
  }
  const b = S.mio.widgets[`b${i + 1}`];
  if (b) b.classList.toggle("on", !!S.mio.buttons[i]);
  mioSample();   // an edge goes out at once, not up to a period later
}
function mioAxis(i, v, fromSlider) {
  S.mio.axes[i] = Math.max(-1, Math.min(1, v));
  const w = S.mio.widgets[`a${i + 1}`];
  if (w && w.tagName === "INPUT" && !fromSlider) w.value = String(S.mio.axes[i]);
  if (w && w.classList && w.classList.contains("mio-joy")) {
    const ch = w.id.split("_").slice(1), x = S.mio.axes[parseInt(ch[0].slice(1)) - 1], y = S.mio.axes[parseInt(ch[1].slice(1)) - 1];
    w.firstChild.style.left = `${33 + 33 * x}%`; w.firstChild.style.top = `${33 - 33 * y}%`;
  }
}
function mioSample() {
  if (!S.mio.timer || !S.allowed.input) return;
  S.mio.sent++;
  const msg = { t: "input", buttons: S.mio.buttons.slice(), axes: S.mio.axes.slice(), c: now() };
  if (S.mio.phone) msg.pose = { position: S.mio.phone.p.slice(), orientation: S.mio.phone.q.slice(), quality: 1 };
  send(msg);
}
// The emulated phone's AR pose ("AR pose" ticked): HEBI's AR app moves the end effector by the phone's
// motion from where it was at the AR button's press (docs/mobile_io.md), so the phone starts at the end
// effector, is dragged in the 3D view (in the view's plane; Shift: along its depth), and its orientation is
// this device's where the browser reports one (DeviceOrientationEvent: alpha about z, beta about x', gamma
// about y''), else level. Every sample then carries it with quality 1.
S.mio.phone = null;
function quatMul(a, b) {
  return [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3], a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
    a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1], a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]];
}
function quatAxis(axis, deg) {
  const h = deg * Math.PI / 360, q = [Math.cos(h), 0, 0, 0];
  q[axis + 1] = Math.sin(h);
  return q;
}
function quatMatrix(q) {
  const [w, x, y, z] = q;
  return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]];
}
function mioPose(on) {
  $("mio_pose").checked = !!on;
  if (!on) { S.mio.phone = null; S.dirty = true; return; }
  const ee = S.frame && S.frame.ee;
  S.mio.phone = { p: ee ? [ee[0][3], ee[1][3], ee[2][3]] : [0.3, 0, 0.3], q: [1, 0, 0, 0] };
  S.dirty = true;
}
$("mio_pose").addEventListener("change", (e) => mioPose(e.target.checked));
window.addEventListener("deviceorientation", (e) => {
  if (!S.mio.phone || e.alpha === null || e.beta === null || e.gamma === null) return;
  const q = quatMul(quatMul(quatAxis(2, e.alpha), quatAxis(0, e.beta)), quatAxis(1, e.gamma));
  const n = Math.hypot(...q);
  S.mio.phone.q = q.map((v) => v / n);
  S.dirty = true;
});
function mioActive(on) {
  $("mio_on").checked = !!on;
  if (on && !S.mio.timer) S.mio.timer = setInterval(mioSample, MIO_PERIOD);
  if (!on && S.mio.timer) { clearInterval(S.mio.timer); S.mio.timer = null; }
  if (!on) {   // momentary buttons and joysticks let go; toggles and sliders keep their place, as on the phone
    for (let i = 0; i < 8; i++) if (S.mio.modes[i] !== "toggle" && S.mio.buttons[i]) mioPress(i, false);
    for (const k of S.mio.keys) { const m = MIO_KEYS[k]; if (m) mioAxis(m[0], 0); }
    S.mio.keys.clear();
  }
}
$("mio_on").addEventListener("change", (e) => mioActive(e.target.checked));
// a hidden tab stops streaming: the arm sees the stream go stale and holds, as with a phone put away
document.addEventListener("visibilitychange", () => { if (document.hidden) mioActive(false); });
window.addEventListener("pagehide", () => mioActive(false));
window.addEventListener("blur", () => { if (S.mio.timer) { mioActive(false); mioActive(true); } });
function showMobileIO(app) {
  if (!S.mio.desc) return;
  $("mio_led").style.background = MIO_LED[(app && app.led) || "transparent"] || MIO_LED.transparent;
  const drops = app ? Object.entries(app.input_dropped || {}).map(([k, v]) => `${k} ${v}`).join(", ") : "";
  $("mio_state").textContent = app ? `${app.state}${app.running ? "" : " (not running: mode app starts it)"} · link ${app.link}${app.armed ? "" : " · not armed"} · ${app.input_accepted} samples${drops ? " · dropped " + drops : ""}` : "–";
}
document.addEventListener("keydown", (e) => {
  if (!S.mio.timer || e.target.tagName === "INPUT" && e.target.type === "number") return;
  const digit = /^Digit([1-8])$/.exec(e.code);
  if (digit) { e.preventDefault(); if (!e.repeat) mioPress(parseInt(digit[1]) - 1, true); return; }
  const m = MIO_KEYS[e.code];
  if (m) { e.preventDefault(); e.stopImmediatePropagation(); S.mio.keys.add(e.code); mioAxis(m[0], m[1]); }
}, true);
document.addEventListener("keyup", (e) => {
  const digit = /^Digit([1-8])$/.exec(e.code);
  if (digit && S.mio.timer) { mioPress(parseInt(digit[1]) - 1, false); return; }
  const m = MIO_KEYS[e.code];
  if (m && S.mio.keys.delete(e.code)) mioAxis(m[0], 0);
}, true);

connect();
