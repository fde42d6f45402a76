// Admin actions on the dashboard (docs/roles.md): cancel/retry a trial or a
// sweep, archive a sweep, notes and tags. Shown to admins only; the server
// checks the role again and refuses a state-changing request without the
// session's CSRF token (X-CSRF-Token, from GET /api/session).

import './actions.css';
import { ApiError, toLogin } from './api.js';
import { sweepDeletion } from './data.js';

let sessionPromise = null;

// {name, role, admin, csrf} of the signed-in token (cached per page load).
export function session() {
  if (!sessionPromise) {
    sessionPromise = fetch('/api/session', { credentials: 'same-origin' }).then(async (res) => {
      if (res.status === 401) {
        toLogin();
        throw new ApiError(401, 'not signed in');
      }
      if (!res.ok) throw new ApiError(res.status, res.statusText);
      return res.json();
    });
    sessionPromise.catch(() => { sessionPromise = null; });
  }
  return sessionPromise;
}

// A state-changing API call with the CSRF token. Throws ApiError.
export async function act(path, body, method = 'POST') {
  const s = await session();
  const res = await fetch('/api/' + path, {
    method,
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, out.error || res.statusText);
  return out;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== '') e.append(c);
  return e;
}

// A button that runs `fn`, shows progress and reports the outcome in `status`.
function actionButton(label, id, status, fn, confirmText) {
  const b = el('button', { type: 'button', class: 'action', id }, label);
  b.addEventListener('click', async () => {
    if (confirmText && !window.confirm(confirmText)) return;
    b.disabled = true;
    status.textContent = label + '…';
    status.className = 'action-status muted';
    try {
      const out = await fn();
      status.textContent = label + ': done' + (out && out.note ? ' (' + out.note + ')' : '');
    } catch (e) {
      status.textContent = label + ' failed: ' + (e && e.message ? e.message : e);
      status.className = 'action-status error-text';
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// Tags and an "archived" badge for the sweeps list.
export function sweepLabels(s) {
  const out = [];
  if (s.archived) out.push(el('span', { class: 'badge archived' }, 'archived'));
  for (const t of s.tags || []) out.push(el('span', { class: 'tag' }, t));
  return out;
}

// The admin toolbar of a sweep page: filled in once the session is known
// (empty for viewers). `onDone` reloads the page's data.
// The page redraws its head on every live update: the toolbar is kept (and
// what an admin is typing with it) while what it shows has not changed.
let cachedToolbar = null;

export function sweepActions(sw, onDone) {
  const deletion = sweepDeletion(sw);
  const key = JSON.stringify([sw.sweep_id, sw.state, sw.archived, sw.notes, sw.tags,
    (sw.counts && sw.counts.failed) || 0, deletion.reason, deletion.confirm]);
  if (cachedToolbar && cachedToolbar.key === key) return cachedToolbar.box;
  const box = el('div', { class: 'actions', id: 'sweep-actions' });
  cachedToolbar = { key, box };
  session().then((s) => {
    const notes = el('p', { class: 'notes', id: 'sweep-notes' }, sw.notes || '');
    const labels = el('span', { id: 'sweep-tags' }, sweepLabels(sw));
    if (!s.admin) {
      box.replaceChildren(labels, sw.notes ? notes : '');
      return;
    }
    const status = el('span', { class: 'action-status', id: 'sweep-action-status', role: 'status' });
    const id = encodeURIComponent(sw.sweep_id);
    const failed = (sw.counts && sw.counts.failed) || 0;
    const live = sw.state === 'active';
    const notesInput = el('textarea', { id: 'sweep-notes-input', rows: 2, placeholder: 'notes', maxlength: 8192 });
    notesInput.value = sw.notes || '';
    const tagsInput = el('input', { id: 'sweep-tags-input', placeholder: 'tags, comma-separated' });
    tagsInput.value = (sw.tags || []).join(', ');
    box.replaceChildren(
      labels,
      live ? actionButton('Cancel sweep', 'sweep-cancel', status,
        () => act(`sweeps/${id}/cancel`).then(onDone), `Cancel every pending and running trial of ${sw.sweep_id}?`) : '',
      failed || sw.state === 'cancelled' ? actionButton('Retry failed', 'sweep-retry', status,
        () => act(`sweeps/${id}/retry`, { include_cancelled: sw.state === 'cancelled' }).then(onDone)) : '',
      actionButton(sw.archived ? 'Unarchive' : 'Archive', 'sweep-archive', status,
        () => act(`sweeps/${id}/archive`, { archived: !sw.archived }).then(onDone)),
      deleteButton(sw, deletion, status),
      el('div', { class: 'annotate' }, notesInput, tagsInput,
        actionButton('Save notes', 'sweep-save-notes', status, () => act(`sweeps/${id}/annotations`, {
          notes: notesInput.value,
          tags: tagsInput.value.split(',').map((t) => t.trim()).filter(Boolean),
        }, 'PUT').then(onDone))),
      status);
  }).catch(() => {});
  return box;
}

// "Delete sweep": disabled with the reason while trials are live; asks with
// the trial count; afterwards the sweeps list (the sweep page has no data
// left to show).
function deleteButton(sw, deletion, status) {
  const id = encodeURIComponent(sw.sweep_id);
  const b = actionButton('Delete sweep', 'sweep-delete', status,
    () => act(`sweeps/${id}`, undefined, 'DELETE').then(() => { location.hash = '#/'; }),
    deletion.confirm);
  b.classList.add('danger');
  if (deletion.allowed) return b;
  b.disabled = true;
  b.title = deletion.reason;
  return el('span', { class: 'delete-blocked' }, b,
    el('span', { class: 'muted', id: 'sweep-delete-reason' }, deletion.reason));
}

// Cancel / retry buttons for one trial (admins; empty otherwise).
export function trialActions(trialId, state, onDone) {
  const box = el('div', { class: 'actions', id: 'trial-actions' });
  session().then((s) => {
    if (!s.admin) return;
    const status = el('span', { class: 'action-status', id: 'trial-action-status', role: 'status' });
    box.replaceChildren(
      state === 'pending' || state === 'running'
        ? actionButton('Cancel trial', 'trial-cancel', status, () => act(`trials/${trialId}/cancel`).then(onDone))
        : '',
      state === 'failed' || state === 'cancelled'
        ? actionButton('Retry trial', 'trial-retry', status, () => act(`trials/${trialId}/retry`).then(onDone))
        : '',
      status);
  }).catch(() => {});
  return box;
}
