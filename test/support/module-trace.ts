import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';

// `node --import tsx --import ./test/support/module-trace.ts …`: records the URL of every module
// the process loads through the ESM loader (our sources and each package's entry as our code
// imports it) and writes them, one a line, to MODULE_TRACE_FILE when the process exits.
// test/cli/role-modules.test.ts reads it to see which channels a role loaded.
const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    loaded.add(url);
    return nextLoad(url, context);
  },
});
process.on('exit', () => {
  const file = process.env.MODULE_TRACE_FILE;
  if (file) writeFileSync(file, [...loaded].join('\n') + '\n');
});
