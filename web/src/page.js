// The dashboard's shared page machinery: the DOM builder, the page's
// elements (app, crumbs, live), the hash route's query, what a page undoes
// when the route changes (onLeave), and the small widgets several pages draw.

export const app = document.getElementById('app');
export const crumbs = document.getElementById('crumbs');
const live = document.getElementById('live');
let cleanup = [];

// Runs `f` when the route changes (timers, live streams, charts).
export function onLeave(...fs) {
  cleanup.push(...fs);
}

// Undoes the current page (onLeave's functions), before the next renders.
export function leave() {
  cleanup.forEach((f) => f());
  cleanup = [];
  live.textContent = '';
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return el;
}

export function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), q: new URLSearchParams(query || '') };
}

export function setQuery(q) {
  const { parts } = parseHash();
  const path = '#/' + parts.map(encodeURIComponent).join('/');
  const s = q.toString();
  history.replaceState(null, '', path + (s ? '?' + s : ''));
}

export function setLive(on, why) {
  live.textContent = on ? '● live' : why === 'deleted' ? '○ sweep deleted' : '○ reconnecting';
  live.className = 'live ' + (on ? 'on' : 'off');
}

export function progress(counts) {
  const total = counts.total || 0;
  const done = counts.succeeded + counts.failed + counts.cancelled + (counts.pruned || 0);
  const pct = total ? (100 * done) / total : 0;
  const bar = h('div', { class: 'bar', title: `${done}/${total} finished` },
    h('span', { class: 'ok', style: `width:${total ? (100 * counts.succeeded) / total : 0}%` }),
    h('span', { class: 'bad', style: `width:${total ? (100 * (counts.failed + counts.cancelled)) / total : 0}%` }),
    // Trials an adaptive search stopped early are finished too (grey).
    h('span', { class: 'pruned', style: `width:${total ? (100 * (counts.pruned || 0)) / total : 0}%` }),
    h('span', { class: 'run', style: `width:${total ? (100 * counts.running) / total : 0}%` }));
  return h('div', { class: 'progress' }, bar,
    h('span', { class: 'counts' },
      `${done}/${total} (${pct.toFixed(0)}%) · running ${counts.running} · pending ${counts.pending} · failed ${counts.failed}` +
      (counts.pruned ? ` · pruned ${counts.pruned}` : '')));
}

export function fmtTime(ms) {
  return ms ? new Date(ms).toLocaleString() : '';
}

// A sweep's state badge: a completed sweep with failed trials is not green.
export function sweepBadge(s, id) {
  const failed = (s.counts && s.counts.failed) || 0;
  const cls = s.state === 'completed' && failed ? 'completed-failed' : s.state;
  const text = failed ? `${s.state} · ${failed} failed` : s.state;
  const attrs = { class: 'badge ' + cls, title: s.unschedulable ? 'unschedulable: ' + s.unschedulable : '' };
  if (id) attrs.id = id;
  return h('span', attrs, s.unschedulable ? text + ' · unschedulable' : text);
}

export function showError(e) {
  if (e && e.status === 401) return;
  app.prepend(h('div', { class: 'error' }, String(e && e.message ? e.message : e)));
}
