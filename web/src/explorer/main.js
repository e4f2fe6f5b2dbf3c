// The query explorer at /explorer: GraphiQL (completion from the schema,
// docs, history) with flowsnap's ready examples, queries over HTTP and
// subscriptions over GraphQL over Server-Sent Events, each with the bearer
// token the dashboard keeps (../dashboard/auth.js) when the server asks for
// one; it asks for it the same way.
import { createElement as h, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { useEditorContext } from '@graphiql/react';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { createClient } from 'graphql-sse';
import { getOperationAST, parse } from 'graphql';
import { authHeaders, onTokenChange, setToken, token, unauthorized, wasRefused } from '../dashboard/auth.js';
import 'graphiql/style.css';
import './explorer.css';

const url = (() => {
  const api = new URLSearchParams(location.search).get('api');
  return new URL(api || '/graphql', location.href).href;
})();
// authFetch is fetch with the token; a 401 forgets it (the prompt returns).
async function authFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(authHeaders())) headers.set(k, v);
  const res = await fetch(input, { ...init, headers });
  if (res.status === 401) unauthorized();
  return res;
}
const http = createGraphiQLFetcher({ url, fetch: authFetch });
const sse = createClient({ url, retryAttempts: 0, headers: authHeaders });

function fetcher(params, opts) {
  let op;
  try {
    op = getOperationAST(parse(params.query), params.operationName);
  } catch {
    // Let the server say what is wrong with the document.
  }
  return op?.operation === 'subscription' ? sse.iterate(params) : http(params, opts);
}

// fill finds, for each example that needs runs, ids of this store: the
// examples name no ids of their own (see examples.json's "find").
async function fill(examples) {
  const finds = [];
  for (const ex of examples) for (const [name, f] of Object.entries(ex.find ?? {})) finds.push({ ex, name, f });
  if (!finds.length) return examples;
  const decl = finds.map((_, i) => `$f${i}: RunFilter`).join(', ');
  const body = finds.map((_, i) => `f${i}: listRuns(filter: $f${i}, first: 100) { nodes { ... on Run { id parentRunId lineageId } } }`).join('\n');
  const vars = Object.fromEntries(finds.map((x, i) => [`f${i}`, x.f.filter ?? {}]));
  const res = await authFetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ query: `query Find(${decl}) { ${body} }`, variables: vars }) });
  const data = (await res.json()).data ?? {};
  const found = new Map();
  finds.forEach(({ ex, name, f }, i) => {
    const pick = f.pick ?? 'id';
    const node = (data[`f${i}`]?.nodes ?? []).find((n) => n && n[pick] != null && (pick === 'id' || n[pick] !== n.id));
    found.set(ex.name + '\0' + name, node ? node[pick] : null);
  });
  const subst = (ex, v) => (typeof v === 'string' && v.startsWith('$') && found.has(ex.name + '\0' + v.slice(1)) ? found.get(ex.name + '\0' + v.slice(1)) ?? 'no-such-run' : Array.isArray(v) ? v.map((x) => subst(ex, x)) : v);
  return examples.map((ex) => ({ ...ex, variables: Object.fromEntries(Object.entries(ex.variables ?? {}).map(([k, v]) => [k, subst(ex, v)])) }));
}

// The examples, once filled, for the pane; the plugin object stays the same
// across renders, as GraphiQL needs to keep it open.
let loaded = null;
const listeners = new Set();
let filling = null;
function loadExamples() {
  filling ??= fetch('/explorer/examples.json').then((r) => r.json()).then(fill).catch(() => []).then((list) => {
    loaded = list;
    listeners.forEach((f) => f(list));
  });
}

function Examples() {
  const [examples, setExamples] = useState(loaded);
  useEffect(() => {
    loadExamples();
    listeners.add(setExamples);
    return () => listeners.delete(setExamples);
  }, []);
  const { queryEditor, variableEditor } = useEditorContext({ nonNull: true });
  return h('div', { className: 'examples' },
    h('div', { className: 'graphiql-doc-explorer-title' }, 'Examples'),
    examples === null ? h('p', null, 'Loading…') : h('ul', null, examples.map((ex) => h('li', { key: ex.name },
      h('button', {
        type: 'button', className: 'example',
        onClick: () => {
          queryEditor?.setValue(ex.query.join('\n'));
          variableEditor?.setValue(JSON.stringify(ex.variables ?? {}, null, 2));
        },
      }, ex.name),
      h('p', null, ex.description)))));
}

const Icon = () => h('span', { 'aria-hidden': true, className: 'examples-icon' }, '☰');

const plugin = { title: 'Examples', icon: Icon, content: Examples };

// GraphiQL decides at its first render whether the plugin pane is hidden,
// before the visiblePlugin prop reaches its store: given that prop, its
// button said "Hide Examples" over a hidden pane. So the pane opens as a
// person would open it, by its button, once the button is there.
function openExamples() {
  const button = document.querySelector('.graphiql-sidebar button[aria-label="Show Examples"]');
  if (button) {
    button.click();
    return true;
  }
  return document.querySelector('.graphiql-sidebar button[aria-label="Hide Examples"]') !== null;
}

// Names for the editors' text areas, which GraphiQL's CodeMirror leaves
// without a label, and for the results pane.
const LABELS = [
  ['.graphiql-query-editor textarea', 'Query'],
  ['.graphiql-editor-tool [aria-label="Variables"] textarea, .graphiql-editor-tool .graphiql-editor:not(.hidden) textarea', 'Variables'],
  ['.graphiql-response textarea', 'Response'],
];
function labelEditors(root) {
  root.querySelectorAll('.graphiql-editor-tool .graphiql-editor').forEach((ed, i) => {
    ed.querySelectorAll('textarea:not([aria-label])').forEach((ta) => ta.setAttribute('aria-label', i === 0 ? 'Variables' : 'Headers'));
  });
  for (const [sel, name] of LABELS) root.querySelectorAll(sel).forEach((ta) => ta.hasAttribute('aria-label') || ta.setAttribute('aria-label', name));
}

function App() {
  useEffect(() => {
    const root = document.getElementById('graphiql');
    let opened = false;
    const fix = () => {
      labelEditors(root);
      if (!opened) opened = openExamples();
    };
    const mo = new MutationObserver(fix);
    mo.observe(root, { childList: true, subtree: true });
    fix();
    return () => mo.disconnect();
  }, []);
  return h(GraphiQL, {
    fetcher,
    plugins: [plugin],
    defaultQuery: '{ position { source revision } }',
    shouldPersistHeaders: false,
  });
}

// TokenPrompt asks for the bearer token, as the dashboard does.
function TokenPrompt() {
  const submit = (e) => {
    e.preventDefault();
    const v = e.target.elements.token.value.trim();
    if (v) setToken(v);
  };
  return h('main', { className: 'token-prompt' },
    h('h1', null, 'flowsnap explorer'),
    h('form', { id: 'token-form', onSubmit: submit },
      h('p', null, 'This server asks for a bearer token: an API token, or an access token of your identity provider. It is kept for this browser tab only.'),
      wasRefused() ? h('p', { role: 'alert', id: 'token-refused' }, 'The server refused that token. Enter another.') : null,
      h('label', { htmlFor: 'token' }, 'Token'),
      h('input', { id: 'token', name: 'token', type: 'password', autoComplete: 'off', spellCheck: false, required: true, autoFocus: true }),
      h('button', { type: 'submit', id: 'token-submit' }, 'Continue')));
}

// Root asks for a token first when the server wants one (its
// /dashboard/config.json says so), and again when it refuses one.
function Root() {
  const [auth, setAuth] = useState(null);
  const [tok, setTok] = useState(token());
  useEffect(() => {
    fetch('/dashboard/config.json').then((r) => (r.ok ? r.json() : {})).catch(() => ({})).then((c) => {
      // The examples are filled from the store as soon as they can be.
      if (!c.auth || token()) loadExamples();
      setAuth(!!c.auth);
    });
    return onTokenChange(() => setTok(token()));
  }, []);
  if (auth === null) return null;
  if (auth && !tok) return h(TokenPrompt);
  return h(App, { key: tok });
}

createRoot(document.getElementById('graphiql')).render(h(Root));
