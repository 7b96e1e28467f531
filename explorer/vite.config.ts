import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// Served by the docs group at /explorer (functions/docs/handler.ts): flat asset names, no CDN, no inline scripts
// (the page's CSP is script-src 'self').
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/explorer/',
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
