// Runs graphql-http's server audits against a GraphQL-over-HTTP endpoint
// and prints one JSON line per audit: {id, name, status, reason}.
// Usage: node audit.mjs http://127.0.0.1:8080/graphql
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs URL');
  process.exit(2);
}
for (const audit of serverAudits({ url })) {
  const result = await audit.fn();
  const line = { id: audit.id, name: audit.name, status: result.status };
  if (result.status !== 'ok') {
    line.reason = result.reason;
  }
  console.log(JSON.stringify(line));
}
