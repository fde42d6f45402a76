// A trial's artifacts (stored checkpoints, result.json) with download links:
// GET /api/trials/<id>/artifacts; each link is the token-protected download
// route (the session cookie goes with it).
import { api } from './api.js';

function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

// Returns a <section id="artifacts"> that fills itself; `h` is the page's
// element helper.
export function artifactsSection(trialId, h) {
  const box = h('section', { id: 'artifacts', class: 'artifacts' }, h('h3', {}, 'Artifacts'),
    h('p', { class: 'muted' }, 'Loading…'));
  api(`trials/${trialId}/artifacts`).then((r) => {
    const list = r.artifacts || [];
    const body = list.length
      ? h('table', { class: 'grid artifacts' },
        h('thead', {}, h('tr', {}, ['name', 'kind', 'size', 'step', 'sha256'].map((c) => h('th', {}, c)))),
        h('tbody', {}, list.map((a) => h('tr', { 'data-artifact': a.name },
          h('td', {}, h('a', { href: a.url, download: a.name }, a.name)),
          h('td', {}, a.kind),
          h('td', {}, fmtBytes(a.bytes)),
          h('td', {}, a.kind === 'checkpoint' ? String(a.step) : ''),
          h('td', { class: 'muted mono', title: a.sha256 }, (a.sha256 || '').slice(0, 12))))))
      : h('p', { class: 'muted empty' }, 'No artifacts: checkpoints appear while the trial runs, result.json once it succeeded.');
    box.replaceChildren(h('h3', {}, 'Artifacts'), body);
  }).catch((e) => {
    box.replaceChildren(h('h3', {}, 'Artifacts'), h('p', { class: 'muted' }, `Artifacts unavailable: ${e.message}`));
  });
  return box;
}
