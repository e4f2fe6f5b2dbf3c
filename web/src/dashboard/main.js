// The flowsnap dashboard: the runs list, a run's page and the activity
// overview, each at its own URL (route.js), kept live (live.js).
import { render } from 'preact';
import { useEffect, useState, useRef } from 'preact/hooks';
import { html } from 'htm/preact';
import { endpoint } from './api.js';
import { href, useRoute } from './route.js';
import { applyTheme, ThemeToggle } from './theme.js';
import { SearchBox } from './SearchBox.js';
import { ListView } from './list/ListView.js';
import { RunView } from './run/RunView.js';
import { Overview } from './overview/Overview.js';
import { useConfig } from './config.js';
import { onTokenChange, token } from './auth.js';
import { TokenPrompt } from './TokenPrompt.js';

applyTheme();

// Skip links: to the view, and on the list to its rows and its pager.
function SkipLinks({ view }) {
  const to = (id) => (e) => {
    const el = document.getElementById(id);
    if (!el) return;
    e.preventDefault();
    const target = el.querySelector('a, button') ?? el;
    if (target === el && !el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
    target.focus();
    target.scrollIntoView({ block: 'nearest' });
  };
  return html`<nav class="skips" aria-label="Skip links">
    <a class="skip" href="#main" onClick=${to('main')}>Skip to content</a>
    ${view === 'list' ? html`<a class="skip" href="#results" onClick=${to('results')}>Skip to the runs</a><a class="skip" href="#pages" onClick=${to('pages')}>Skip to the pages</a>` : ''}
  </nav>`;
}

function App() {
  const r = useRoute();
  const [paused, setPaused] = useState(false);
  const [position, setPosition] = useState(null);
  const [mode, setMode] = useState('subscription');
  const main = useRef();
  useEffect(() => {
    main.current?.focus({ preventScroll: true });
    scrollTo(0, 0);
  }, [r.view, r.id]);
  useEffect(() => {
    // "/" focuses the search box, as in many dashboards.
    const on = (e) => {
      if (e.key === '/' && !e.ctrlKey && !e.metaKey && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName)) {
        e.preventDefault();
        document.getElementById('search')?.focus();
      }
    };
    addEventListener('keydown', on);
    return () => removeEventListener('keydown', on);
  }, []);
  const props = { r, paused, setPosition, setMode };
  const current = (v) => (r.view === v ? 'page' : undefined);
  return html`
    <${SkipLinks} view=${r.view} />
    <header class="top">
      <a class="brand" href=${href('/')}><img src="/favicon.svg" alt="" width="20" height="20" /> flowsnap</a>
      <nav aria-label="Main"><a href=${href('/')} aria-current=${current('list')}>Runs</a> <a href=${href('/overview')} aria-current=${current('overview')}>Overview</a> <a href="/explorer">Explorer</a></nav>
      <${SearchBox} />
      <div class="live">
        <span id="position" title=${position ? `source ${position.source}` : ''}>${position ? html`revision <strong>${position.revision}</strong>` : '…'}</span>
        <span id="live-state" class=${paused ? 'paused' : 'on'}>${paused ? 'paused' : mode === 'polling' ? 'live (polling)' : 'live'}</span>
        <button type="button" id="pause" aria-pressed=${paused} onClick=${() => setPaused(!paused)}>${paused ? 'Resume' : 'Pause'}</button>
        <${ThemeToggle} />
      </div>
    </header>
    <main id="main" tabindex="-1" ref=${main}>
      ${r.view === 'run' ? html`<${RunView} key=${r.id} id=${r.id} ...${props} />` : r.view === 'overview' ? html`<${Overview} ...${props} />` : html`<${ListView} ...${props} />`}
    </main>
    <footer class="muted">API <code>${endpoint}</code>${position ? html` · source <code>${position.source}</code>` : ''}</footer>`;
}

// Root asks for a token first when the server wants one, and again when it
// refuses one; the views start afresh with each new token.
function Root() {
  const config = useConfig();
  const [tok, setTok] = useState(token());
  useEffect(() => onTokenChange(() => setTok(token())), []);
  if (!config.loaded) return null;
  if (config.auth && !tok) return html`<${TokenPrompt} />`;
  return html`<${App} key=${tok} />`;
}

render(html`<${Root} />`, document.getElementById('app'));
