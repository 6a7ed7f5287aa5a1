import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

// A memory cgroup for a service process, so it runs under the limit its Helm Deployment gives
// it (charts/mailbox-service/values.yaml `resources.limits.memory`): the kernel enforces the
// limit, and Node sizes V8's heap from it at start, as in the pod. Without a limit a process on
// this 24 GiB machine lets garbage grow to gigabytes before collecting it, which no pod does.

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

export interface MemoryCgroup {
  /** The file a process writes its pid to, to join the group (before it execs node). */
  procsFile: string;
  limitMb: number;
  /** Highest usage the kernel recorded for the group (v1 `max_usage_in_bytes`, v2 `memory.peak`), MB. */
  peakMb(): number | null;
  /** Times the group hit its limit and the kernel killed a process (v1 `oom_control`, v2 `memory.events`). */
  oomKills(): number;
  remove(): void;
}

/** A fresh memory cgroup capped at `limitMb`, or why there is none here (not root, no controller). */
export function memoryCgroup(limitMb: number): MemoryCgroup | { unavailable: string } {
  const name = `mbx-test-${randomBytes(4).toString('hex')}`;
  const bytes = String(limitMb * 1024 * 1024);
  try {
    if (existsSync(path.join(V1, 'memory.limit_in_bytes'))) {
      const dir = path.join(V1, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'memory.limit_in_bytes'), bytes);
      return group(dir, limitMb, {
        peak: 'memory.max_usage_in_bytes',
        oom: () => /oom_kill (\d+)/.exec(readFileSync(path.join(dir, 'memory.oom_control'), 'utf8'))?.[1],
      });
    }
    if (readFileSync(path.join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) {
      const dir = path.join(V2, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'memory.max'), bytes);
      return group(dir, limitMb, {
        peak: 'memory.peak',
        oom: () => /oom_kill (\d+)/.exec(readFileSync(path.join(dir, 'memory.events'), 'utf8'))?.[1],
      });
    }
    return { unavailable: 'no memory cgroup controller' };
  } catch (err) {
    return { unavailable: (err as Error).message };
  }
}

function group(dir: string, limitMb: number, files: { peak: string; oom: () => string | undefined }): MemoryCgroup {
  return {
    procsFile: path.join(dir, 'cgroup.procs'),
    limitMb,
    peakMb() {
      try {
        return Math.round(Number(readFileSync(path.join(dir, files.peak), 'utf8')) / (1024 * 1024));
      } catch {
        return null;
      }
    },
    oomKills() {
      try {
        return Number(files.oom() ?? 0);
      } catch {
        return 0;
      }
    },
    remove() {
      try {
        rmdirSync(dir);
      } catch {
        // still has a process (it is being killed): the kernel keeps an empty group harmlessly
      }
    },
  };
}
