// The dashboard's one door to flowsnap: GraphQL queries over fetch and
// subscriptions over GraphQL over Server-Sent Events, both to the endpoint
// the page was opened with (?api=URL, else this server's /graphql).
import { createClient } from 'graphql-sse';

export const endpoint = (() => {
  const api = new URLSearchParams(location.search).get('api');
  return api ? new URL(api, location.href).href : new URL('/graphql', location.href).href;
})();

// query runs one operation and returns {data, errors, position}.
export async function query(document, variables = {}) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query: document, variables }),
  });
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
  client ??= createClient({ url: endpoint, retryAttempts: 0 });
  return client.subscribe({ query: document, variables }, {
    next,
    error: (err) => error(err instanceof Error ? err : new Error(String(err?.message ?? err))),
    complete: () => {},
  });
}
