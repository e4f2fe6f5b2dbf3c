// The serving flowsnap's settings the dashboard follows (GET
// /dashboard/config.json): the stale-heartbeat threshold, and whether it
// asks for a bearer token (auth). A dashboard
// pointed at another flowsnap (?api=) or served without the file falls back
// to the defaults.
import { useEffect, useState } from 'preact/hooks';

export const DEFAULTS = { staleAfterMs: 300_000 };

let loaded = null;
function load() {
  loaded ??= fetch('/dashboard/config.json')
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({}))
    .then((c) => ({ ...DEFAULTS, ...c, loaded: true }));
  return loaded;
}

export function useConfig() {
  const [c, setC] = useState(DEFAULTS);
  useEffect(() => { load().then(setC); }, []);
  return c;
}
