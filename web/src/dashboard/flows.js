// The flow names the API knows (its flows field), offered as suggestions
// wherever a flow is typed: <FlowNames /> is the datalist "flow-names".
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { query } from './api.js';
import { FLOWS } from './queries.js';

let names = null;

export function FlowNames() {
  const [list, setList] = useState(names ?? []);
  useEffect(() => {
    if (names) return;
    query(FLOWS, {}).then((r) => { names = r.data?.flows?.nodes ?? []; setList(names); }).catch(() => {});
  }, []);
  return html`<datalist id="flow-names">${list.map((f) => html`<option value=${f} />`)}</datalist>`;
}
