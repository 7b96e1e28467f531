/**
 * The explorer's static files come from `npm run build:explorer` (run by `npm ci` through `prepare`). A clone
 * that skipped it still gets them: `npm start` builds them once when explorer/dist is missing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function ensureExplorerBuilt(say: (line: string) => void): void {
  if (existsSync(`${ROOT}explorer/dist/index.html`)) return;
  say('Explorer: building it once (explorer/dist is missing)…');
  // The package script is the one definition of the build.
  const result = spawnSync('npm', ['run', '--silent', 'build:explorer'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) say('Explorer: the build failed (see above); the API works, /explorer will answer 404 until `npm run build:explorer` succeeds.');
}
