import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

// mailparser (3.9.31 asks for nodemailer 10.0.12) and mailauth (7.1.0 asks for 10.0.10) each pull
// in nodemailer. Older copies miss fixes the SMTP paths rely on: 10.0.12 turns a bare CR into
// CRLF (a bare CR ends DATA for some receivers: SMTP smuggling), 10.1.0 hardened message streams
// and SMTP connections. package.json's `"overrides": { "nodemailer": "$nodemailer" }` forces one
// patched copy everywhere; this fails the build if a vulnerable one returns.
const ROOT = path.resolve(import.meta.dirname, '../..');
const FLOOR = [10, 1, 0];

const parse = (v: string) => v.split(/[.-]/).slice(0, 3).map(Number);
const atLeast = (v: string, floor: number[]) => {
  const p = parse(v);
  for (let i = 0; i < 3; i++) if (p[i]! !== floor[i]!) return p[i]! > floor[i]!;
  return true;
};

/** Every installed copy of a package, nested node_modules included. */
function installed(
  name: string,
  dir = path.join(ROOT, 'node_modules'),
  found: { path: string; version: string }[] = [],
  scope = '',
): { path: string; version: string }[] {
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === '.bin') continue;
    const full = path.join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installed(name, full, found, entry.name);
      continue;
    }
    if (!scope && entry.name === name && existsSync(path.join(full, 'package.json'))) {
      found.push({
        path: path.relative(ROOT, full),
        version: JSON.parse(readFileSync(path.join(full, 'package.json'), 'utf8')).version,
      });
    }
    if (existsSync(path.join(full, 'node_modules'))) installed(name, path.join(full, 'node_modules'), found);
  }
  return found;
}

describe('nodemailer is patched wherever it is pulled in', () => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

  it('pins every copy to the direct dependency through npm overrides', () => {
    expect(pkg.overrides?.nodemailer).toBe('$nodemailer');
  });

  it('has only patched copies installed', () => {
    const copies = installed('nodemailer');
    expect(copies.length).toBeGreaterThan(0);
    const root = copies.find((c) => c.path === path.join('node_modules', 'nodemailer'))!;
    expect(atLeast(root.version, FLOOR), `node_modules/nodemailer ${root.version} < ${FLOOR.join('.')}`).toBe(true);
    expect(copies.filter((c) => c.version !== root.version)).toEqual([]);
  });

  it('has only patched copies in the lock file', () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const entries = Object.entries(lock.packages as Record<string, { version?: string }>).filter(([k]) =>
      k.endsWith('node_modules/nodemailer'),
    );
    expect(entries.length).toBeGreaterThan(0);
    expect(
      entries.filter(([, v]) => !v.version || !atLeast(v.version, FLOOR)).map(([k, v]) => `${k}@${v.version}`),
    ).toEqual([]);
  });
});
