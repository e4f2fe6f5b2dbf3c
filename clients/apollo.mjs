// Runs one query through Apollo Client, set up as docs/clients.md says, and
// prints what Apollo returns as JSON: {configured: {data, codes},
// withoutPossibleTypes, withoutTypePolicies, warnings}, codes being the
// errors' extensions.code. The two other clients each leave out one
// part of the setup, to show what it is for; warnings are what the
// configured client wrote to the console; the two others run only when
// the last argument is --controls. VARIABLES_JSON may be an array:
// then the query runs once per element, in order, from the network (the
// pages of a connection), and what is printed is the last answer, which the
// cache has merged.
// Usage: node apollo.mjs URL QUERY [VARIABLES_JSON [--controls]]
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';

const [url, source, variables, controls] = process.argv.slice(2);
if (!url || !source) {
  console.error('usage: node apollo.mjs URL QUERY [VARIABLES_JSON [--controls]]');
  process.exit(2);
}

// The setup docs/clients.md shows, from one introspection query:
//   - possibleTypes: every union and interface with the types that make it
//     up. Without it Apollo cannot tell that a Run is a Snapshot, and a
//     fragment on Snapshot matches nothing.
//   - typePolicies: only Node types (runs, by their global id) are
//     normalized; every other object stays inside its parent. A step's, an
//     attempt's or an inbound event's id is unique only within its run, and
//     normalized by it, one run's step would overwrite another's.
//   - the connections page forward with first/after; Apollo's
//     relayStylePagination merges the pages of each into one list of edges.
async function fetchCacheConfig(url) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: '{ __schema { queryType { name } subscriptionType { name } types { kind name possibleTypes { name } interfaces { name } } } }',
    }),
  });
  const { data } = await res.json();
  const roots = [data.__schema.queryType.name, data.__schema.subscriptionType?.name];
  const possibleTypes = {};
  const typePolicies = {};
  for (const t of data.__schema.types) {
    if (t.possibleTypes) {
      possibleTypes[t.name] = t.possibleTypes.map((p) => p.name);
    }
    const isNode = t.interfaces?.some((i) => i.name === 'Node');
    if (t.kind === 'OBJECT' && !t.name.startsWith('__') && !roots.includes(t.name) && !isNode) {
      typePolicies[t.name] = { keyFields: false };
    }
  }
  const pages = relayStylePagination();
  typePolicies.Run = { fields: { children: pages, rounds: pages, steps: pages, inboundEvents: pages, events: pages } };
  typePolicies.Query = { fields: { listRuns: relayStylePagination(['filter', 'order']) } };
  return { possibleTypes, typePolicies };
}

const query = gql(source);
const parsed = variables ? JSON.parse(variables) : {};
const pages = Array.isArray(parsed) ? parsed : [parsed];

// errorPolicy 'all' keeps the data beside field errors: a bad cursor nulls
// only its connection, and the rest of the answer stands.
async function read(cache) {
  const client = new ApolloClient({ link: new HttpLink({ uri: url }), cache });
  let answer;
  for (const [i, vars] of pages.entries()) {
    const fetchPolicy = i === 0 ? 'cache-first' : 'network-only';
    const { data, error } = await client.query({ query, variables: vars, errorPolicy: 'all', fetchPolicy });
    if (error && !error.errors) {
      throw error; // not an answer with GraphQL errors: the request failed
    }
    answer = { data: data ?? null, codes: (error?.errors ?? []).map((e) => e.extensions?.code) };
  }
  return answer;
}

const { possibleTypes, typePolicies } = await fetchCacheConfig(url);
const warnings = [];
const { warn, error } = console;
console.warn = (...args) => warnings.push(args.map(String).join(' '));
console.error = console.warn;
const configured = await read(new InMemoryCache({ possibleTypes, typePolicies }));
console.warn = warn;
console.error = error;
const answer = { configured, warnings };
if (controls === '--controls') {
  answer.withoutPossibleTypes = (await read(new InMemoryCache({ typePolicies }))).data;
  answer.withoutTypePolicies = (await read(new InMemoryCache({ possibleTypes }))).data;
}
console.log(JSON.stringify(answer));
