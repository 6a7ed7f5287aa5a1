import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import preact from '@preact/preset-vite';

const webRoot = path.dirname(new URL(import.meta.url).pathname);

/**
 * The API reference page (/api/docs) uses Scalar's standalone bundle, copied from node_modules into
 * the build so nothing is fetched from a CDN at run time.
 */
function scalarStandalone(): Plugin {
  return {
    name: 'scalar-standalone',
    apply: 'build',
    writeBundle(options) {
      const out = path.join(options.dir!, 'api-docs');
      mkdirSync(out, { recursive: true });
      // The package exports no path to it, so it is read from node_modules directly.
      const standalone = path.join(webRoot, '../node_modules/@scalar/api-reference/dist/browser/standalone.js');
      copyFileSync(standalone, path.join(out, 'scalar.js'));
    },
  };
}

// Built into dist/web (make build); the api role serves it at / (src/channels/http/console/).
export default defineConfig({
  root: webRoot,
  base: '/',
  plugins: [preact(), scalarStandalone()],
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // No inline scripts or data: modules: the console's Content-Security-Policy allows 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
