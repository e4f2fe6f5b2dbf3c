// Hash routing, so that every view is a URL that can be shared:
// "#/" the runs list ("#/?status=FAILED" filtered), "#/run/ID" a run,
// "#/overview" the activity overview.
import { useEffect, useState } from 'preact/hooks';

export function route() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, qs = ''] = h.split('?');
  const params = new URLSearchParams(qs);
  const m = path.match(/^\/run\/(.+)$/);
  if (m) return { view: 'run', id: decodeURIComponent(m[1]), path, params };
  if (path === '/overview') return { view: 'overview', path, params };
  return { view: 'list', path: '/', params };
}

// href is the link to path with params (empty values left out), keeping the
// page's ?api= parameter.
export function href(path, params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const qs = p.toString();
  const api = new URLSearchParams(location.search).get('api');
  return (api ? `?api=${encodeURIComponent(api)}` : location.pathname === '/' ? '' : location.pathname) + '#' + path + (qs ? '?' + qs : '');
}

export const runHref = (id) => href('/run/' + encodeURIComponent(id));
export const listHref = (filter) => href('/', filter);

// go navigates to a link made by href.
export const go = (link) => { location.hash = link.split('#')[1]; };

// withParam is the current view's link with one parameter changed.
export function withParam(r, key, value) {
  return href(r.path === '/' ? '/' : r.path, { ...Object.fromEntries(r.params), [key]: value });
}

export function useRoute() {
  const [r, setR] = useState(route);
  useEffect(() => {
    const on = () => setR(route());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return r;
}
