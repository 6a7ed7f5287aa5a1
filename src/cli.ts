#!/usr/bin/env node
// The entry point checks the Node version before anything else loads: on an older Node the real
// program could fail with an obscure syntax or import error instead of this one line.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 17)) {
  process.stderr.write(
    `mailbox: Node.js >= 22.17 is required, this is ${process.version}; ` +
      'run it with `make run` or `npm start`, which use the Node 24 pinned in node_modules\n',
  );
  process.exit(1);
}
await import('./cli/program.js');
