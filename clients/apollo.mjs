// Runs one query through Apollo Client, set up as the README says, and
// prints what Apollo returns as JSON: {configured: {data, codes},
// withoutPossibleTypes, withoutTypePolicies, warnings}, codes being the
// errors' extensions.code. The two other clients each leave out one
// part of the setup, to show what it is for; warnings are what the
// configured client wrote to the console.
// Usage: node apollo.mjs URL QUERY VARIABLES_JSON
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';

const [url, source, variables] = process.argv.slice(2);
if (!url || !source) {
  console.error('usage: node apollo.mjs URL QUERY [VARIABLES_JSON]');
  process.exit(2);
}

// The README's setup, from one introspection query:
//   - possibleTypes: every union and interface with the types that make it
//     up. Without it Apollo cannot tell that a Run is a Snapshot, and a
//     fragment on Snapshot matches nothing.
//   - typePolicies: only Node types (runs, by their global id) are
//     normalized; every other object stays inside its parent. A step's, an
//     attempt's or an inbound event's id is unique only within its run, and
//     normalized by it, one run's step would overwrite another's.
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
  return { possibleTypes, typePolicies };
}

const query = gql(source);
const vars = variables ? JSON.parse(variables) : {};

// errorPolicy 'all' keeps the data beside field errors: a bad cursor nulls
// only its connection, and the rest of the answer stands.
async function read(cache) {
  const client = new ApolloClient({ link: new HttpLink({ uri: url }), cache });
  const { data, error } = await client.query({ query, variables: vars, errorPolicy: 'all' });
  if (error && !error.errors) {
    throw error; // not an answer with GraphQL errors: the request failed
  }
  return { data: data ?? null, codes: (error?.errors ?? []).map((e) => e.extensions?.code) };
}

const { possibleTypes, typePolicies } = await fetchCacheConfig(url);
const warnings = [];
const { warn, error } = console;
console.warn = (...args) => warnings.push(args.map(String).join(' '));
console.error = console.warn;
const configured = await read(new InMemoryCache({ possibleTypes, typePolicies }));
console.warn = warn;
console.error = error;
const withoutPossibleTypes = (await read(new InMemoryCache({ typePolicies }))).data;
const withoutTypePolicies = (await read(new InMemoryCache({ possibleTypes }))).data;
console.log(JSON.stringify({ configured, withoutPossibleTypes, withoutTypePolicies, warnings }));
