// The sweeps list (#/): progress, state, axes; tick two to compare them.
import { api } from '../api.js';
import { sweepLabels } from '../actions.js';
import { app, crumbs, fmtTime, h, onLeave, progress, sweepBadge } from '../page.js';

export async function renderSweeps(q) {
  crumbs.textContent = '';
  const showArchived = q.get('archived') === '1';
  const picked = new Set();
  const compareBtn = h('button', { type: 'button', id: 'compare-sweeps', disabled: '' }, 'Compare the two ticked sweeps');
  compareBtn.addEventListener('click', () => {
    const [a, b] = [...picked];
    location.hash = `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
  });
  const toggle = h('label', { class: 'muted' }, h('input', {
    type: 'checkbox', id: 'show-archived', checked: showArchived ? '' : null,
    onchange: (e) => { location.hash = e.target.checked ? '#/?archived=1' : '#/'; },
  }), ' show archived sweeps');
  app.replaceChildren(h('h2', {}, 'Sweeps'), h('div', { class: 'table-tools' }, toggle, compareBtn),
    h('div', { id: 'sweeps' }, h('p', { class: 'muted' }, 'Loading…')));
  const draw = async () => {
    const { sweeps: all } = await api('sweeps');
    const box = document.getElementById('sweeps');
    if (!box) return;
    const sweeps = showArchived ? all : all.filter((s) => !s.archived);
    const hidden = all.length - sweeps.length;
    window.__smoe.sweepsShown = sweeps.map((s) => s.sweep_id);
    if (!sweeps.length) {
      box.replaceChildren(h('p', { class: 'muted' }, all.length ? `All ${all.length} sweeps are archived (tick "show archived sweeps").`
        : 'No sweeps yet. Submit one: smoe sweep submit examples/sraven-demo.yaml'));
      return;
    }
    const pick = (id) => h('input', {
      type: 'checkbox', class: 'pick-sweep', 'data-sweep': id, checked: picked.has(id) ? '' : null,
      title: 'tick two sweeps to compare them',
      onchange: (e) => {
        if (e.target.checked) picked.add(id); else picked.delete(id);
        compareBtn.disabled = picked.size !== 2;
      },
    });
    box.replaceChildren(h('table', { class: 'grid sweeps' },
      h('thead', {}, h('tr', {}, ['', 'sweep', 'kind', 'state', 'progress', 'axes', 'updated'].map((c) => h('th', {}, c)))),
      h('tbody', {}, sweeps.map((s) => h('tr', { 'data-sweep': s.sweep_id },
        h('td', {}, pick(s.sweep_id)),
        h('td', {}, h('a', { href: '#/sweep/' + encodeURIComponent(s.sweep_id) }, s.sweep_id), ' ', sweepLabels(s)),
        h('td', {}, s.kind),
        h('td', {}, sweepBadge(s)),
        h('td', {}, progress(s.counts)),
        h('td', { class: 'muted' }, s.axes.map((a) => `${a.name} ∈ {${a.values.join(', ')}}`).join(' × ') + ` × ${s.seeds.length} seed(s)`),
        h('td', { class: 'muted' }, fmtTime(s.updated_ms)))))),
    hidden ? h('p', { class: 'muted', id: 'archived-hidden' }, `${hidden} archived sweep(s) hidden.`) : '');
  };
  await draw();
  window.__smoe.ready = true;
  const timer = setInterval(() => draw().catch(() => {}), 5000);
  onLeave(() => clearInterval(timer));
}
