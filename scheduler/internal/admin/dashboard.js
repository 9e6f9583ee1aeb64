// The slotcron dashboard: it reads the JSON API of the replica that served
// it and re-renders in place. Every name, error and reason is untrusted: the
// DOM is built from text nodes and properties, never from markup.
//
// The page's script is this file and dashboard_jobs.js, dashboard_catalog.js,
// dashboard_job.js, dashboard_cluster.js, dashboard_schedules.js,
// dashboard_actions.js and dashboard_main.js, in that order, in one
// function's scope (dashboard.go puts them together).

const REFRESH_MS = 5000;
const SVG_NS = ['http:', '', 'www.w3.org', '2000', 'svg'].join('/');
const TOKEN_KEY = 'slotcron.token';

// --- DOM building ---------------------------------------------------

// h makes an element: props are set as properties, except text (its
// text), class, dataset, on (listeners) and attributes named aria-*,
// role, for and colspan; children are nodes or strings (text).
function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k.startsWith('aria-') || k === 'role' || k === 'for' || k === 'colspan') e.setAttribute(k, v === true ? 'true' : String(v));
    else e[k] = v;
  }
  add(e, kids);
  return e;
}
// add appends kids to e: nodes, strings (text) or arrays of them, to any
// depth; null, undefined and false are left out.
function add(e, ...kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
// s makes an SVG element; attrs are numbers and class names, and a
// title child, if any, is text.
function s(tag, attrs, title) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (title) {
    const t = document.createElementNS(SVG_NS, 'title');
    t.textContent = title;
    e.append(t);
  }
  return e;
}
const $ = (sel) => document.querySelector(sel);
const enc = encodeURIComponent;

// --- time ------------------------------------------------------------

// skew is the server's clock minus ours, from the Date header.
let skew = 0;
const now = () => Date.now() + skew;
function dur(sec) {
  if (sec === undefined || sec === null || isNaN(sec)) return '';
  const neg = sec < 0;
  let a = Math.abs(sec), out;
  if (a > 0 && a < 0.001) out = '< 1 ms';
  else if (a < 1) out = Math.round(a * 1000) + ' ms';
  else if (a < 60) out = (a < 10 ? a.toFixed(1) : Math.round(a)) + ' s';
  else if (a < 3600) out = Math.floor(a / 60) + ' min ' + Math.floor(a % 60) + ' s';
  else if (a < 86400) out = Math.floor(a / 3600) + ' h ' + Math.floor(a % 3600 / 60) + ' min';
  else out = Math.floor(a / 86400) + ' d ' + Math.floor(a % 86400 / 3600) + ' h';
  return neg ? '-' + out : out;
}
function rel(iso) {
  if (!iso) return '';
  const d = (now() - Date.parse(iso)) / 1000;
  if (Math.abs(d) < 1) return 'just now';
  return d >= 0 ? dur(d) + ' ago' : 'in ' + dur(-d);
}
// utc shows an RFC 3339 time in UTC, to the second.
function utc(iso) {
  if (!iso) return '';
  const t = new Date(Date.parse(iso));
  return isNaN(t) ? iso : t.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
// near shows a time in UTC, without its date when that is ref's date.
function near(iso, ref) {
  const t = utc(iso);
  return t && t.slice(0, 10) === utc(ref).slice(0, 10) ? t.slice(11) : t;
}
// local shows an RFC 3339 time as written in its own offset.
const local = (iso) => iso ? iso.replace('T', ' ') : '';
// when is a time as "3 min ago", with the exact time as its title.
const when = (iso) => iso ? h('span', { text: rel(iso), title: utc(iso), class: 'when' }) : '';

// --- the API -----------------------------------------------------------

class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}
const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
async function api(method, path, body) {
  const opts = { method, headers: {}, cache: 'no-store' };
  // The token goes with every request: reads may need one (read_auth).
  if (token()) opts.headers.Authorization = 'Bearer ' + token();
  if (method !== 'GET' && body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, opts);
  } catch (e) {
    throw new APIError(0, 'unreachable', 'the replica did not answer (' + e.message + ')');
  }
  const date = Date.parse(resp.headers.get('Date') || '');
  if (!isNaN(date)) skew = date - Date.now();
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!resp.ok) {
    let msg = data && data.error ? data.error : resp.status + ' ' + resp.statusText;
    if (resp.status === 401) {
      msg += ': enter the API token at the top of the page';
      askToken();
    }
    throw new APIError(resp.status, data && data.code || 'http_' + resp.status, msg);
  }
  return { data, headers: resp.headers, status: resp.status };
}

// --- the status line -------------------------------------------------

// health is when the last refresh succeeded (our clock) and, if the
// latest failed, why.
const health = { ok: 0, err: null };
function paintStatus() {
  const el = $('#status');
  const secs = Math.round((Date.now() - health.ok) / 1000);
  const last = !health.ok ? 'not updated yet' : secs < 1 ? 'updated just now' : 'updated ' + (secs < 60 ? secs + ' s' : dur(secs)) + ' ago';
  if (!health.err) {
    el.className = 'status ok';
    el.textContent = last;
    return;
  }
  const what = health.err.code === 'unreachable' ? 'replica unreachable'
    : health.err.code === 'store_unavailable' ? 'store unreachable'
      : health.err.code === 'not_running' ? 'scheduler not running' : 'error';
  el.className = 'status err';
  el.textContent = what + ' · ' + last;
}
function report(err) {
  if (err) health.err = err; else { health.ok = Date.now(); health.err = null; }
  const p = $('#problem');
  p.hidden = !err;
  p.textContent = err ? err.message : '';
  paintStatus();
}
setInterval(paintStatus, 1000);

// --- the token and what it may do ------------------------------------

// caller is who the token is, as /api/whoami says: {name, role}; role ''
// for an anonymous reader; null until known or while refused.
let caller = null;
const ROLES = ['', 'reader', 'operator', 'admin'];
const may = (role) => !!caller && ROLES.indexOf(caller.role) >= ROLES.indexOf(role);
// gate marks btn as needing role, and paints it: disabled, with the
// reason as its title, for a caller below it.
function gate(btn, role) {
  btn.dataset.needs = role;
  paintGate(btn);
  return btn;
}
function paintGate(btn) {
  const ok = may(btn.dataset.needs);
  btn.disabled = !ok;
  btn.title = ok ? '' : 'needs the ' + btn.dataset.needs + ' role';
}
function paintToken() {
  const who = caller && caller.name ? caller.name + ' (' + caller.role + ')' : '';
  $('#token-state').textContent = who ? 'token of ' + who + ' for this tab'
    : token() ? 'token set for this tab' : 'no token: reads only, if this replica allows them';
  document.querySelectorAll('[data-needs]').forEach(paintGate);
}
// askToken says the API wants a token and puts the cursor where it goes.
function askToken() {
  caller = null;
  $('#token-state').textContent = token() ? 'the token was refused: enter another' : 'this replica wants a token: enter it here';
  document.querySelectorAll('[data-needs]').forEach(paintGate);
  if (document.activeElement !== $('#token')) $('#token').focus();
}
// whoami learns what the token may do, and repaints the actions.
async function whoami() {
  try {
    caller = (await api('GET', '/api/whoami')).data;
    paintToken();
  } catch (e) { if (e.status !== 401) { caller = null; paintToken(); } }
}
$('#token').value = token();
$('#token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = $('#token').value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
  whoami().then(() => kick());
});
$('#token-forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  $('#token').value = '';
  whoami().then(() => kick());
});
paintToken();

// --- shared pieces -----------------------------------------------------

const RANK = { stalled: 0, failing: 1, running: 2, paused: 3, ok: 4, idle: 5 };
const dot = (hl, label) => h('span', { class: 'health h-' + hl }, h('span', { class: 'dot', 'aria-hidden': 'true' }), label || hl);
function outcomeClass(x) {
  if (x.state === 'running' || x.state === 'retrying') return 's-run';
  if (x.state === 'done') return x.outcome === 'succeeded' ? 's-ok' : 's-fail';
  if (x.state === 'abandoned') return 's-fail';
  return 's-skip';
}
function outcomeText(x) {
  return x.state === 'done' || x.state === 'retrying' ? x.state + ' (' + x.outcome + ')' : x.state;
}
// spark draws recent slots, oldest first, as bars as high as their run
// was long, coloured by how they ended.
function spark(recent) {
  const w = 6, hgt = 22;
  const svg = s('svg', { class: 'spark', width: Math.max(recent.length, 1) * w, height: hgt, viewBox: '0 0 ' + Math.max(recent.length, 1) * w + ' ' + hgt, role: 'img' });
  const longest = Math.max(0.001, ...recent.map((r) => r.duration_seconds || 0));
  const counts = {};
  recent.forEach((r, i) => {
    const c = outcomeClass(r);
    counts[c] = (counts[c] || 0) + 1;
    const bh = Math.max(5, Math.round(hgt * (0.3 + 0.7 * (r.duration_seconds || 0) / longest)));
    svg.append(s('rect', { x: i * w, y: hgt - bh, width: w - 1, height: bh, class: c },
      utc(r.slot) + ' · ' + outcomeText(r) + (r.duration_seconds ? ' · ' + dur(r.duration_seconds) : '') + (r.manual ? ' · manual' : '') + (r.backfill ? ' · backfill' : '') + (r.attempt > 1 ? ' · attempt ' + r.attempt : '')));
  });
  const names = { 's-ok': 'succeeded', 's-fail': 'failed', 's-run': 'running or retrying', 's-skip': 'skipped' };
  svg.setAttribute('aria-label', recent.length ? 'recent slots: ' + Object.entries(counts).map(([c, n]) => n + ' ' + names[c]).join(', ') : 'no slots yet');
  return svg;
}
function pauseText(p, scope) {
  if (!p) return null;
  return h('div', { class: 'reason' },
    h('span', { class: 'warn', text: scope + ' paused' }),
    p.by ? [' by ', h('b', { text: p.by })] : '',
    p.at ? [' ', when(p.at)] : '',
    p.reason ? h('div', { class: 'small', text: '“' + p.reason + '”' }) : '');
}
function runningText(r) {
  // lease_left_seconds compares the store's clock with the replica's:
  // only the server's stalled says the lease has surely run out.
  const lease = r.stalled
    ? h('span', { class: 'bad', text: 'lease ran out ' + dur(-r.lease_left_seconds) + ' ago: takeover due' })
    : r.lease_left_seconds > 0 ? h('span', { text: 'lease left ~' + dur(r.lease_left_seconds) })
      : h('span', { text: 'lease ending' });
  return h('div', { class: 'running' }, h('b', { text: dur(r.elapsed_seconds) }), ' on ', h('span', { text: r.holder }),
    r.attempt > 1 ? ' (attempt ' + r.attempt + ')' : '', ' · ', lease);
}
function msg(el, text, ok) {
  el.className = 'msg ' + (ok ? 'ok' : 'err');
  el.textContent = text;
}
// nextSlot shows a job's next slot: how soon, then when in its zone
// and, for a zone other than UTC, in UTC. The zone's name may go to a
// line of its own, so that the column stays as narrow as a time.
function nextSlot(j) {
  const inUTC = j.timezone === 'UTC';
  return [h('span', { text: rel(j.next), class: 'nowrap' }),
    h('div', { class: 'small muted' }, h('span', { class: 'nowrap', text: local(j.next_local) }), inUTC ? '' : ' ' + j.timezone),
    inUTC ? '' : h('div', { class: 'small muted nowrap', text: utc(j.next) })];
}
const OVERLAP = { allow: 'slots may run together', forbid: 'a slot is skipped while another runs', replace: 'a slot replaces the running one', queue: 'a slot waits for the running one' };
function overlapText(o) {
  return OVERLAP[o] ? [o, ' ', h('span', { class: 'small muted', text: '(' + OVERLAP[o] + ')' })] : o;
}
function failureText(f) {
  return f.error || f.reason || f.outcome || f.state;
}
