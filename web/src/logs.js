// A trial's attempt logs (the trainer's stderr and non-event stdout lines;
// docs/logs-and-system-metrics.md): GET /api/trials/<id>/logs?attempt=N.
// One button per attempt; a running attempt's live tail is polled (each
// request makes its worker send a fresh tail with its next heartbeats).
import { api } from './api.js';

const POLL_MS = 2000;

// Returns { el, stop }: a <section id="logs"> that fills itself, and a
// function that ends its polling. `h` is the page's element helper.
export function logsSection(trialId, h, attempts) {
  const pre = h('pre', { class: 'log', id: 'trial-log', hidden: true }, '');
  const status = h('p', { class: 'muted', id: 'trial-log-status' }, 'Loading…');
  const picker = h('span', { class: 'tools', id: 'trial-log-attempts' });
  const box = h('section', { id: 'logs', class: 'logs' },
    h('div', { class: 'card-head' }, h('h3', {}, 'Log'), picker), status, pre);
  let timer = null;
  let stopped = false;
  let shown = 0; // attempt shown; 0 = the latest

  const stop = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  const load = async () => {
    timer = null;
    let r;
    try {
      r = await api(`trials/${trialId}/logs`, { attempt: shown || undefined });
    } catch (e) {
      status.textContent = `Log unavailable: ${e.message}`;
      return;
    }
    if (stopped) return;
    picker.replaceChildren(...(r.attempts || []).map((a) => {
      const b = h('button', { type: 'button', class: 'tool' + (a === r.attempt ? ' active' : ''), 'data-attempt': String(a) },
        `attempt ${a}`);
      b.addEventListener('click', () => {
        shown = a;
        if (timer) clearTimeout(timer);
        load();
      });
      return b;
    }));
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = r.text || '';
    pre.hidden = !r.text;
    if (atBottom) pre.scrollTop = pre.scrollHeight;
    const kept = r.total_bytes > (r.text || '').length
      ? ` · last ${(r.text || '').length} of ${r.total_bytes} bytes (the worker keeps the whole log)` : '';
    if (!r.attempt) status.textContent = 'Not started yet: no log.';
    else if (r.running) {
      status.textContent = `Attempt ${r.attempt} · running · live tail` +
        (r.as_of_ms ? ` as of ${new Date(r.as_of_ms).toLocaleTimeString()}` : ' (waiting for the worker)') + kept;
    } else {
      status.textContent = `Attempt ${r.attempt} · ended` + kept + (r.text ? '' : ' · nothing was logged');
    }
    box.dataset.running = String(!!r.running);
    box.dataset.attempt = String(r.attempt || 0);
    if (r.running && !stopped) timer = setTimeout(load, POLL_MS);
  };
  if (attempts && attempts.length) load();
  else status.textContent = 'Not started yet: no log.';
  return { el: box, stop };
}
