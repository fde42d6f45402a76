// SMoE Lab dashboard: hash-routed pages over the coordinator's JSON API.
//   #/                         sweeps with progress
//   #/sweep/<id>?x=&series=&facet=&metric=&tune=&points=&band=&theory=&q=&state=
//              &sort=&page=&pc=&pcm=&sel=&cm=&hide=
//   #/trial/<sweep>/<hex>      learning curves + router telemetry
//   #/compare/<a>/<b>?metric=&x=&series=   two sweeps side by side
//   #/workers?all=1            workers: state, slots, heartbeat, trials
//   (docs/dashboard.md lists every parameter)
import './style.css';
import { toLogin } from './api.js';
import { renderWorkers } from './workers.js';
import { app, crumbs, h, leave, onLeave, parseHash, showError } from './page.js';
import { renderCompare } from './pages/compare.js';
import { renderSweep } from './pages/sweep.js';
import { renderSweeps } from './pages/sweeps.js';
import { renderTrial } from './pages/trial.js';

async function route() {
  leave();
  window.__smoe.ready = false;
  window.__smoe.charts = {};
  const { parts, q } = parseHash();
  try {
    if (parts[0] === 'sweep' && parts[1]) await renderSweep(parts[1], q);
    else if (parts[0] === 'trial' && parts.length >= 3) await renderTrial(parts[1] + '/' + parts[2], route);
    else if (parts[0] === 'compare' && parts.length >= 3) await renderCompare(parts[1], parts[2], q);
    else if (parts[0] === 'workers') {
      onLeave(await renderWorkers(app, crumbs, h, q));
      window.__smoe.ready = true;
    }
    else await renderSweeps(q);
  } catch (e) {
    showError(e);
  }
}

document.getElementById('logout').addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST' });
  toLogin();
});
window.addEventListener('hashchange', route);
// Back from /login: return to the route that needed the sign-in (the
// hashchange renders it).
const next = sessionStorage.getItem('smoe.next');
sessionStorage.removeItem('smoe.next');
if (next && next !== '#/' && (!location.hash || location.hash === '#/')) {
  location.hash = next;
} else {
  route();
}
