// The dashboard's one door to flowsnap: GraphQL queries over fetch and
// subscriptions over GraphQL over Server-Sent Events, both to the endpoint
// the page was opened with (?api=URL, else this server's /graphql), both
// with the bearer token when there is one (auth.js).
import { createClient } from 'graphql-sse';
import { authHeaders, unauthorized } from './auth.js';

export const endpoint = (() => {
  const api = new URLSearchParams(location.search).get('api');
  return api ? new URL(api, location.href).href : new URL('/graphql', location.href).href;
})();

// query runs one operation and returns {data, errors, position}.
export async function query(document, variables = {}) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json', ...authHeaders() },
    body: JSON.stringify({ query: document, variables }),
  });
  if (res.status === 401) {
    unauthorized();
    throw new Error('the server asks for a token');
  }
  let body;
  try {
    body = await res.json();
  } catch {
    throw new Error(`the API answered ${res.status} ${res.statusText}`);
  }
  return { data: body.data ?? null, errors: body.errors ?? [], position: body.extensions?.position ?? null };
}

let client;

// subscribe calls next(payload) for each event of the subscription and
// error(err) when it fails; it returns a function that ends it.
export function subscribe(document, variables, { next, error }) {
  // headers is asked at each connection: a new token is sent from then on.
  client ??= createClient({ url: endpoint, retryAttempts: 0, headers: authHeaders });
  return client.subscribe({ query: document, variables }, {
    next,
    error: (err) => {
      if (err?.response?.status === 401) unauthorized();
      error(err instanceof Error ? err : new Error(String(err?.message ?? err)));
    },
    complete: () => {},
  });
}
