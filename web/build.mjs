// Builds the dashboard and the explorer into dist/, which the Go package
// embeds, and writes dist/STAMP: the SHA-256 of every input (this file,
// package.json, package-lock.json and src/), which a Go test recomputes to
// tell when dist/ is stale; and copies axe-core into testdata/ for the
// browser tests.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const here = new URL('.', import.meta.url).pathname;

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

// stamp must match the Go side (inputsDigest in web.go).
export function stamp() {
  const list = ['build.mjs', 'package.json', 'package-lock.json', ...files(join(here, 'src')).map((f) => relative(here, f).split(sep).join('/'))].sort();
  const h = createHash('sha256');
  for (const f of list) {
    h.update(f + '\0');
    h.update(readFileSync(join(here, f)));
    h.update('\0');
  }
  return h.digest('hex');
}

const out = join(here, 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: here,
  entryPoints: { dashboard: 'src/dashboard/main.js', explorer: 'src/explorer/main.js' },
  entryNames: '[name]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  outdir: out,
  legalComments: 'linked',
  define: { 'process.env.NODE_ENV': '"production"' },
  loader: { '.woff2': 'file', '.woff': 'file', '.ttf': 'file', '.svg': 'dataurl' },
  logLevel: 'warning',
});
copyFileSync(join(here, 'src/dashboard/style.css'), join(out, 'dashboard.css'));
copyFileSync(join(here, 'src/dashboard/index.html'), join(out, 'dashboard.html'));
copyFileSync(join(here, 'src/dashboard/favicon.svg'), join(out, 'favicon.svg'));
copyFileSync(join(here, 'src/explorer/index.html'), join(out, 'explorer.html'));
copyFileSync(join(here, 'src/explorer/examples.json'), join(out, 'examples.json'));
writeFileSync(join(out, 'STAMP'), stamp() + '\n');
// axe-core for the browser tests, which inject it into the pages: kept
// beside the tests (not embedded in the binary), so that they need no Node.
mkdirSync(join(here, 'testdata'), { recursive: true });
copyFileSync(join(here, 'node_modules/axe-core/axe.min.js'), join(here, 'testdata/axe.min.js'));
