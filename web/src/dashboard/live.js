// Keeping a view live: load it now, and again whenever the store's position
// moves (a subscription over Server-Sent Events), unless paused; without
// subscriptions, poll.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { subscribe } from './api.js';
import { LIVE_POSITION } from './queries.js';

// useLive returns [state, mode]: state holds what load() returned (data,
// errors, position) and failure, the message of a load that threw; mode is
// "subscription" or "polling". key names what load reads: a new key loads
// anew.
export function useLive(load, paused, key) {
  const [state, setState] = useState({ loading: true });
  const [mode, setMode] = useState('subscription');
  const seq = useRef(0);
  const refresh = useCallback(async () => {
    const n = ++seq.current;
    try {
      const r = await load();
      if (n === seq.current) setState({ ...r, loading: false });
    } catch (err) {
      if (n === seq.current) setState((s) => ({ ...s, loading: false, failure: err.message }));
    }
  }, [key]);
  useEffect(() => {
    setState({ loading: true });
    refresh();
  }, [key]);
  // A view resumed after a pause reads again at once: it missed changes.
  const wasPaused = useRef(paused);
  useEffect(() => {
    const resumed = wasPaused.current && !paused;
    wasPaused.current = paused;
    if (paused) return undefined;
    if (resumed) refresh();
    let timer = null;
    let pending = false;
    // Coalesce bursts of changes into one reload every half second.
    const schedule = () => {
      if (timer) { pending = true; return; }
      refresh();
      timer = setTimeout(() => {
        timer = null;
        if (pending) { pending = false; schedule(); }
      }, 500);
    };
    let first = true;
    let stop = subscribe(LIVE_POSITION, {}, {
      next: () => { if (first) { first = false; return; } schedule(); },
      error: () => {
        setMode('polling');
        const poll = setInterval(refresh, 2000);
        stop = () => clearInterval(poll);
      },
    });
    setMode('subscription');
    return () => { stop(); clearTimeout(timer); };
  }, [key, paused]);
  return [state, mode, refresh];
}

// useNow is the wall clock, ticking every ms milliseconds, for ages.
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
