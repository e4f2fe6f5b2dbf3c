// Prints a GraphQL endpoint's schema as SDL, read by introspection: what
// relay-compiler is pointed at.
// Usage: node schema.mjs http://127.0.0.1:8080/graphql > schema.graphql
import { buildClientSchema, getIntrospectionQuery, printSchema } from 'graphql';

const url = process.argv[2];
if (!url) {
  console.error('usage: node schema.mjs URL');
  process.exit(2);
}
const res = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ query: getIntrospectionQuery({ specifiedByUrl: true }) }),
});
const { data, errors } = await res.json();
if (errors) {
  console.error(JSON.stringify(errors));
  process.exit(1);
}
console.log(printSchema(buildClientSchema(data)));
