// The header's search box: a run id opens that run's page, and a message
// says so when the store has no such run.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { query } from './api.js';
import { FIND } from './queries.js';
import { go, runHref } from './route.js';

export function SearchBox() {
  const [msg, setMsg] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    const input = e.currentTarget.elements.q;
    const id = input.value.trim();
    if (!id) { setMsg('Type a run id.'); return; }
    setMsg('Looking…');
    try {
      const r = await query(FIND, { id });
      const run = r.data?.run;
      if (run?.__typename === 'Run') {
        setMsg('');
        input.value = '';
        go(runHref(run.id));
      } else if (run?.__typename === 'MissingRun') {
        setMsg(run.deleted ? `Run ${id} was deleted at revision ${run.deletedAtRevision}.` : `There is no run ${id}.`);
      } else {
        setMsg(r.errors[0]?.message ?? `There is no run ${id}.`);
      }
    } catch (err) {
      setMsg(err.message);
    }
  };
  return html`<form role="search" class="search" onSubmit=${submit} aria-label="Go to a run">
    <label for="search" class="sr-only">Run id</label>
    <input id="search" name="q" type="search" placeholder="Go to run id  ( / )" autocomplete="off" spellcheck="false" onInput=${() => msg && setMsg('')} />
    <button type="submit">Go</button>
    <span id="search-msg" role="status" class="search-msg">${msg}</span>
  </form>`;
}
