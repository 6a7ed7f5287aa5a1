import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

// CPU and memory of another process (the service under test), read from Linux /proc:
// - CPU: utime + stime of /proc/<pid>/stat (fields 14 and 15, in clock ticks; CLK_TCK from getconf),
//   as a delta around one piece of work. Every thread of the process counts (GC, libuv pool).
// - Peak RSS: VmHWM of /proc/<pid>/status, the process's high-water mark, after resetting it to the
//   current RSS by writing 5 to /proc/<pid>/clear_refs (Linux ≥ 4.0); VmRSS is also sampled every
//   20 ms as a fallback where the reset is not permitted. The larger of the two is reported.

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU time (user + system) the process has used so far, in ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces; fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

const statusKb = (pid: number, key: 'VmRSS' | 'VmHWM'): number => {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
};

export const rssMb = (pid: number): number => statusKb(pid, 'VmRSS') / 1024;

/** Measures one piece of work done by process `pid`: CPU ms and peak RSS MB while it ran. */
export class ProcessMeter {
  private cpu0 = 0;
  private sampledKb = 0;
  private timer: NodeJS.Timeout | null = null;
  /** How the peak was read: `VmHWM after clear_refs` or `VmRSS sampled every 20 ms`. */
  peakMethod = 'VmHWM after clear_refs';

  constructor(private readonly pid: number) {}

  start(): void {
    try {
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
    } catch {
      this.peakMethod = 'VmRSS sampled every 20 ms';
    }
    this.cpu0 = cpuMs(this.pid);
    this.sampledKb = statusKb(this.pid, 'VmRSS');
    this.timer = setInterval(() => {
      try {
        this.sampledKb = Math.max(this.sampledKb, statusKb(this.pid, 'VmRSS'));
      } catch {
        /* the process is gone; stop() reports what was seen */
      }
    }, 20);
  }

  stop(): { cpuMs: number; peakRssMb: number } {
    if (this.timer) clearInterval(this.timer);
    const hwm = this.peakMethod.startsWith('VmHWM') ? statusKb(this.pid, 'VmHWM') : 0;
    return {
      cpuMs: Math.round(cpuMs(this.pid) - this.cpu0),
      peakRssMb: Math.round(Math.max(hwm, this.sampledKb) / 1024),
    };
  }
}

/**
 * Resolves once process `pid` has used at most one clock tick of CPU over `quietMs` (the work a
 * request started behind its reply is done), or after `maxMs` whatever it is doing.
 */
export async function cpuQuiet(pid: number, quietMs = 150, maxMs = 2_000): Promise<void> {
  const tickMs = 1000 / CLK_TCK;
  const deadline = Date.now() + maxMs;
  let since = Date.now();
  let at = cpuMs(pid);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    const now = cpuMs(pid);
    if (now - at > tickMs) {
      at = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
  }
}
