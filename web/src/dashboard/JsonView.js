// A JSON value as a collapsible tree, with a button that copies it. Long
// strings are cut at STRING_CUT characters and long arrays or objects show
// their first ITEM_CUT members, each with a button to see all.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';

const STRING_CUT = 200;
const ITEM_CUT = 50;

function Str({ s }) {
  const [all, setAll] = useState(false);
  if (s.length <= STRING_CUT || all) return html`<span class="j-str">${JSON.stringify(s)}</span>`;
  return html`<span class="j-str">${JSON.stringify(s.slice(0, STRING_CUT))}…</span> <button type="button" class="link" onClick=${() => setAll(true)}>show all ${s.length} characters</button>`;
}

function Scalar({ v }) {
  if (v === null) return html`<span class="j-null">null</span>`;
  if (typeof v === 'string') return html`<${Str} s=${v} />`;
  if (typeof v === 'number') return html`<span class="j-num">${String(v)}</span>`;
  return html`<span class="j-bool">${String(v)}</span>`;
}

function Node({ name, v, depth }) {
  const [all, setAll] = useState(false);
  const label = name === undefined ? '' : html`<span class="j-key">${name}</span>: `;
  if (v === null || typeof v !== 'object') return html`<li>${label}<${Scalar} v=${v} /></li>`;
  const isArr = Array.isArray(v);
  const entries = isArr ? v.map((x, i) => [i, x]) : Object.entries(v);
  const shown = all ? entries : entries.slice(0, ITEM_CUT);
  const brief = isArr ? `[ ${entries.length} item${entries.length === 1 ? '' : 's'} ]` : `{ ${entries.length} key${entries.length === 1 ? '' : 's'} }`;
  if (!entries.length) return html`<li>${label}<span class="muted">${isArr ? '[]' : '{}'}</span></li>`;
  return html`<li><details open=${depth < 2}><summary>${label}<span class="muted">${brief}</span></summary>
    <ul class="j-tree">${shown.map(([k, x]) => html`<${Node} key=${k} name=${k} v=${x} depth=${depth + 1} />`)}</ul>
    ${shown.length < entries.length ? html`<button type="button" class="link" onClick=${() => setAll(true)}>show ${entries.length - shown.length} more</button>` : ''}
  </details></li>`;
}

// JsonView shows value under a heading-like summary named label.
export function JsonView({ value, label, id }) {
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(JSON.stringify(value, null, 2));
      setCopied('Copied.');
    } catch {
      setCopied('The browser did not allow copying.');
    }
    setTimeout(() => setCopied(''), 2500);
  };
  return html`<div class="json" id=${id}>
    <div class="json-bar"><strong>${label}</strong> <button type="button" class="copy" onClick=${copy}>Copy JSON</button> <span role="status" class="muted">${copied}</span></div>
    <ul class="j-tree j-root"><${Node} v=${value} depth=${0} /></ul>
  </div>`;
}
