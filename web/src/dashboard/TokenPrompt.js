// The sign-in form of a server with authentication: a bearer token, kept
// for this tab's session (auth.js).
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import { setToken, wasRefused } from './auth.js';

export function TokenPrompt() {
  const input = useRef();
  useEffect(() => input.current?.focus(), []);
  const submit = (e) => {
    e.preventDefault();
    const v = input.current.value.trim();
    if (v) setToken(v);
  };
  return html`<main id="main" class="token-prompt">
    <h1><img src="/favicon.svg" alt="" width="24" height="24" /> flowsnap</h1>
    <form id="token-form" onSubmit=${submit}>
      <p>This server asks for a bearer token: an API token, or an access token of your identity provider. It is kept for this browser tab only.</p>
      ${wasRefused() ? html`<p role="alert" id="token-refused" class="errors">The server refused that token. Enter another.</p>` : ''}
      <label for="token">Token</label>
      <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required ref=${input} />
      <button type="submit" id="token-submit">Continue</button>
    </form>
  </main>`;
}
