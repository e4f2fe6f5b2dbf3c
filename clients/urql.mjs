// Runs one query through urql with Graphcache, set up as docs/clients.md says,
// and prints {data, codes, networkError, warnings} as JSON: codes are the
// GraphQL errors' extensions.code, warnings what urql wrote to the console.
// VARIABLES_JSON may be an array: then the query runs once per element, in
// order, from the network (the pages of a connection), and what is printed
// is the last answer, which the cache has merged.
// Usage: node urql.mjs URL QUERY [VARIABLES_JSON]
import { Client, fetchExchange, gql } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { getIntrospectionQuery } from 'graphql';

const [url, source, variables] = process.argv.slice(2);
if (!url || !source) {
  console.error('usage: node urql.mjs URL QUERY [VARIABLES_JSON]');
  process.exit(2);
}

// The setup docs/clients.md shows: Graphcache given the schema by introspection, so it
// matches fragments on the Snapshot union and the Step interface exactly.
// Only Node types (runs, by their global id) are normalized; every other
// object is kept inside its parent: a step's, an attempt's or an inbound
// event's id is unique only within its run. The connections page forward
// with first/after; relayPagination merges the pages of each.
async function fetchSchema(url) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: getIntrospectionQuery() }),
  });
  const { data } = await res.json();
  return data;
}

function embeddedKeys(schema) {
  const roots = new Set([schema.__schema.queryType?.name, schema.__schema.subscriptionType?.name]);
  const keys = {};
  for (const t of schema.__schema.types) {
    const isNode = (t.interfaces ?? []).some((i) => i.name === 'Node');
    if (t.kind === 'OBJECT' && !t.name.startsWith('__') && !roots.has(t.name) && !isNode) {
      keys[t.name] = () => null;
    }
  }
  return keys;
}

const pages = relayPagination();
const resolvers = {
  Run: { children: pages, rounds: pages, steps: pages, inboundEvents: pages, events: pages },
  Query: { listRuns: pages },
};

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(' '));
console.error = console.warn;

const schema = await fetchSchema(url);
const client = new Client({
  url,
  exchanges: [cacheExchange({ schema, keys: embeddedKeys(schema), resolvers }), fetchExchange],
});
const parsed = variables ? JSON.parse(variables) : {};
let result;
for (const [i, vars] of (Array.isArray(parsed) ? parsed : [parsed]).entries()) {
  const requestPolicy = i === 0 ? 'cache-first' : 'network-only';
  result = await client.query(gql(source), vars, { requestPolicy }).toPromise();
}
const codes = (result.error?.graphQLErrors ?? []).map((e) => e.extensions?.code);
const networkError = result.error?.networkError?.message ?? null;
process.stdout.write(JSON.stringify({ data: result.data ?? null, codes, networkError, warnings }) + '\n');
