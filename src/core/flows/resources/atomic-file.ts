import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes `file` so readers see the old or the new content, never half of it: a temp file in the
 * same directory, then rename (atomic on POSIX). The mode is set on the temp file before the
 * rename, so a secret is never readable by others, not even for a moment.
 */
export async function writeFileAtomic(file: string, content: string, mode: number, dirMode = 0o755): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: dirMode });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, content, { mode, flag: 'wx' });
    await chmod(temp, mode); // the umask may have narrowed or, with an odd umask, not applied `mode`
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Reads a JSON file; null when it does not exist. */
export async function readJsonFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
