// Light or dark: the system's preference (prefers-color-scheme) unless this
// browser chose one with the toggle, kept in localStorage.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';

const KEY = 'flowsnap-theme';
const stored = () => { try { return localStorage.getItem(KEY); } catch { return null; } };

export function applyTheme(choice = stored()) {
  if (choice === 'light' || choice === 'dark') document.documentElement.dataset.theme = choice;
  else delete document.documentElement.dataset.theme;
}

const NEXT = { system: 'dark', dark: 'light', light: 'system' };

export function ThemeToggle() {
  const [choice, setChoice] = useState(stored() ?? 'system');
  const pick = () => {
    const next = NEXT[choice] ?? 'system';
    try {
      if (next === 'system') localStorage.removeItem(KEY); else localStorage.setItem(KEY, next);
    } catch { /* a browser without storage keeps the choice for this page only */ }
    applyTheme(next);
    setChoice(next);
  };
  return html`<button type="button" id="theme" onClick=${pick} title="Switch between the system's colours, dark and light">Theme: ${choice}</button>`;
}
