import { readFileSync } from 'node:fs';
import { table } from '../lib/measure.js';

// Summarises a V8 .cpuprofile (node --cpu-prof) of the api process under one load: self time per
// function and per group (our folder, a package, node internals, GC, idle), in ms per request,
// over only the samples taken while the load ran (the profile spans the whole process).

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Which part of the stack a script belongs to: a folder of ours, an npm package, or node itself. */
export function groupOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  // The innermost package: pg installed under @mikro-orm/postgresql is pg.
  const pkg = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)].pop();
  if (pkg) return pkg[1]!;
  const ours = /\/dist\/(src\/[^/]+(?:\/[^/]+)?)\//.exec(url) ?? /\/(src\/[^/]+(?:\/[^/]+)?)\//.exec(url);
  if (ours) return ours[1]!;
  return url.replace(/^.*\//, '');
}

export interface ProfileSummary {
  /** Sampled ms inside the window (idle included). */
  windowMs: number;
  busyMs: number;
  requests: number;
  groups: Array<{ name: string; ms: number }>;
  functions: Array<{ name: string; where: string; ms: number }>;
}

/**
 * Self time by group and function over the samples between `fromUs` and `toUs` (the process's
 * monotonic clock in µs: process.hrtime of any process on the machine), divided by `requests`.
 */
export function summariseProfile(file: string, fromUs: number, toUs: number, requests: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const groups = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; us: number }>();
  let t = profile.startTime;
  let windowUs = 0;
  let idleUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    windowUs += delta;
    if (functionName === '(idle)') idleUs += delta;
    const group = groupOf(url, functionName);
    groups.set(group, (groups.get(group) ?? 0) + delta);
    const where = url ? `${url.replace(/^.*\/(node_modules|dist)\//, '')}:${lineNumber + 1}` : '';
    const key = `${functionName}@${where}`;
    const entry = functions.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    entry.us += delta;
    functions.set(key, entry);
  }
  const perRequest = (us: number) => us / 1000 / Math.max(requests, 1);
  return {
    windowMs: windowUs / 1000,
    busyMs: (windowUs - idleUs) / 1000,
    requests,
    groups: [...groups].map(([name, us]) => ({ name, ms: perRequest(us) })).sort((a, b) => b.ms - a.ms),
    functions: [...functions.values()]
      .map((f) => ({ name: f.name, where: f.where, ms: perRequest(f.us) }))
      .sort((a, b) => b.ms - a.ms),
  };
}

/** The summary as two markdown tables (groups, then the top functions), figures in ms per request. */
export function formatProfile(s: ProfileSummary, top = 25): string {
  const ms = (v: number) => v.toFixed(3);
  const busy = s.busyMs / Math.max(s.requests, 1);
  return [
    `${s.requests} requests in ${(s.windowMs / 1000).toFixed(1)} s sampled; busy (not idle) ${ms(busy)} ms CPU per request`,
    '',
    table(s.groups.slice(0, top).map((g) => ({ group: g.name, 'ms/req': ms(g.ms) }))),
    '',
    table(s.functions.slice(0, top).map((f) => ({ function: f.name, where: f.where, 'ms/req': ms(f.ms) }))),
  ].join('\n');
}
