// JSON API client. Auth is the HttpOnly cookie set by POST /login; a 401 sends
// the user to the login page and brings them back to the same hash route.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function toLogin() {
  sessionStorage.setItem('smoe.next', location.hash || '#/');
  location.href = '/login';
}

export async function api(path, params = {}) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  }
  const url = '/api/' + path + (qs.toString() ? '?' + qs : '');
  const res = await fetch(url, { credentials: 'same-origin' });
  if (res.status === 401) {
    toLogin();
    throw new ApiError(401, 'not signed in');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, body.error || res.statusText);
  return body;
}

// Subscribes to a sweep's Server-Sent Events. Returns a close function.
export function watchSweep(sweepId, onEvent, onState) {
  const es = new EventSource('/api/sweeps/' + encodeURIComponent(sweepId) + '/events');
  es.addEventListener('hello', () => onState(true));
  es.addEventListener('sweep', (e) => {
    onState(true);
    try {
      onEvent(JSON.parse(e.data));
    } catch (err) {
      console.error('bad event', err);
    }
  });
  es.onerror = () => onState(false);
  // The sweep was deleted (docs/dashboard.md): the stream ends for good.
  es.addEventListener('deleted', () => {
    es.close();
    onState(false, 'deleted');
  });
  return () => es.close();
}
