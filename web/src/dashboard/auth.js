// The bearer token the pages send when the server asks for one
// (/dashboard/config.json says "auth": true). It is kept in sessionStorage:
// for this tab's session only, never in the URL or in localStorage. A 401
// from the server forgets it, which brings the prompt back.
const KEY = 'flowsnap.token';
const listeners = new Set();
let refused = false;

export function token() {
  try {
    return sessionStorage.getItem(KEY) ?? '';
  } catch {
    return '';
  }
}

export function setToken(t) {
  refused = false;
  sessionStorage.setItem(KEY, t.trim());
  listeners.forEach((f) => f());
}

// unauthorized is what a 401 calls: the token (or its absence) was refused.
export function unauthorized() {
  refused = token() !== '';
  sessionStorage.removeItem(KEY);
  listeners.forEach((f) => f());
}

// wasRefused says the prompt is back because the server refused a token.
export const wasRefused = () => refused;

// authHeaders are the headers that carry the token, none without one.
export function authHeaders() {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

// onTokenChange calls f whenever the token is set or forgotten; it returns
// the function that stops that.
export function onTokenChange(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}
