// The workers page (#/workers; issue 31 item 7): GET /api/workers every few
// seconds. Each worker's state (ready, draining, stopped: drained and exited,
// lost: silent longer than the lease timeout), slots and GPUs in use, kinds,
// labels, last heartbeat and the trials it runs (links). Admins get a Drain
// button (POST /api/workers/<id>/drain with the session's CSRF token).
import { api } from './api.js';
import { act, session } from './actions.js';
import { fmtAge, workersSummary } from './data.js';

const POLL_MS = 3000;

// Renders the page into `app`; returns a function that stops its polling.
export async function renderWorkers(app, crumbs, h, q) {
  crumbs.replaceChildren(h('a', { href: '#/' }, 'Sweeps'), ' / workers');
  const all = q.get('all') === '1';
  const toggle = h('label', { class: 'muted' }, h('input', {
    type: 'checkbox', id: 'workers-all', checked: all ? '' : null,
    onchange: (e) => { location.hash = e.target.checked ? '#/workers?all=1' : '#/workers'; },
  }), ' also workers silent for more than a day');
  const status = h('span', { class: 'action-status muted', id: 'workers-action' });
  const box = h('div', { id: 'workers' }, h('p', { class: 'muted' }, 'Loading…'));
  app.replaceChildren(h('h2', {}, 'Workers'), h('div', { class: 'table-tools' }, toggle, status), box);
  const me = await session().catch(() => ({ admin: false }));
  let timer = null;
  let stopped = false;

  const drainButton = (w) => {
    const b = h('button', { type: 'button', class: 'action drain', 'data-worker': w.worker_id }, 'Drain');
    b.addEventListener('click', async () => {
      if (!window.confirm(`Drain worker ${w.worker_id}? It leases nothing more; its ${w.trial_ids.length} ` +
        'running trial(s) checkpoint and resume elsewhere; then its daemon exits.')) return;
      b.disabled = true;
      status.textContent = `Draining ${w.worker_id}…`;
      status.className = 'action-status muted';
      try {
        await act(`workers/${encodeURIComponent(w.worker_id)}/drain`);
        status.textContent = `Drain ${w.worker_id}: done`;
      } catch (e) {
        status.textContent = `Drain ${w.worker_id} failed: ${e.message}`;
        status.className = 'action-status error-text';
      }
      draw().catch(() => {});
    });
    return b;
  };

  const draw = async () => {
    const r = await api('workers', { all: all ? 1 : undefined });
    if (stopped) return;
    window.__smoe.workers = r.workers.map((w) => ({ id: w.worker_id, state: w.state, draining: w.draining }));
    if (!r.workers.length) {
      box.replaceChildren(h('p', { class: 'muted' }, r.hidden
        ? `No worker heard from in the last day (${r.hidden} older; tick the box to see them).`
        : 'No workers yet. Start one: smoe worker --coordinator HOST:PORT'));
      return;
    }
    const head = ['worker', 'host', 'state', 'slots', 'GPUs', 'kinds', 'labels', 'last heartbeat', 'trials'];
    if (me.admin) head.push('');
    box.replaceChildren(
      h('p', { class: 'muted', id: 'workers-summary' }, workersSummary(r)),
      h('table', { class: 'grid workers' },
        h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, c)))),
        h('tbody', {}, r.workers.map((w) => h('tr', { 'data-worker': w.worker_id, 'data-state': w.state },
          h('td', {}, w.worker_id),
          h('td', {}, w.hostname || '–'),
          h('td', {}, h('span', { class: 'badge ' + (w.state === 'ready' ? 'active' : w.state) }, w.state),
            w.draining && w.state === 'lost' ? h('span', { class: 'muted' }, ' (drain asked)') : null,
            w.state === 'paused' ? h('div', { class: 'muted paused-reason' }, w.paused) : null),
          h('td', {}, `${w.slots_used}/${w.slots}`),
          h('td', {}, `${w.gpus_used}/${w.gpus}`),
          h('td', { class: 'muted' }, w.kinds.join(', ')),
          h('td', { class: 'muted' }, Object.entries(w.labels).map(([k, v]) => `${k}=${v}`).join(', ') || '–'),
          h('td', { title: new Date(w.last_heartbeat_ms).toLocaleString() }, `${fmtAge(w.heartbeat_age_s)} ago`),
          h('td', {}, w.trial_ids.length ? w.trial_ids.flatMap((id, i) => [i ? ' ' : null,
            h('a', { href: '#/trial/' + id.split('/').map(encodeURIComponent).join('/') }, id)]) : '–'),
          me.admin ? h('td', {}, w.draining || w.state === 'stopped' ? null : drainButton(w)) : null)))),
      r.workers.some((w) => w.state === 'lost')
        ? h('p', { class: 'muted', id: 'workers-lost-note' },
          `lost: no heartbeat for more than ${fmtAge(r.lost_after_s)} (the lease timeout); their trials are re-queued.`)
        : null);
  };

  await draw();
  const poll = () => {
    timer = setTimeout(async () => {
      await draw().catch(() => {});
      if (!stopped) poll();
    }, POLL_MS);
  };
  poll();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
