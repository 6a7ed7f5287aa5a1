import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import {
  refId,
  refOf,
  validateManifest,
  type DomainResource,
  type MailboxResource,
  type Manifest,
  type SecretManifest,
} from './manifest.schema.js';

/** One refused document: where it is and why, so a user can fix it without guessing. */
export interface ManifestError {
  file: string;
  /** 1-based position of the document in its file (`---` separated); 0 when the file itself failed. */
  document: number;
  line: number;
  message: string;
}

export interface ManifestSet {
  domains: DomainResource[];
  mailboxes: MailboxResource[];
  secrets: SecretManifest[];
  errors: ManifestError[];
  /**
   * False when a file or the directory could not be read or parsed. A source must then not
   * treat a missing resource as deleted: a half-saved file would otherwise disable mailboxes.
   */
  complete: boolean;
}

export const formatManifestError = (e: ManifestError): string =>
  (e.document > 0 ? `${e.file}: document ${e.document} (line ${e.line}): ` : `${e.file}: `) + e.message;

/** Parses one multi-document YAML text; a bad document is reported and the others still load. */
export function parseManifests(
  text: string,
  file: string,
): { manifests: Array<{ manifest: Manifest; document: number; line: number }>; errors: ManifestError[] } {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter, uniqueKeys: true });
  const docs = Array.isArray(parsed) ? parsed : [];
  const manifests: Array<{ manifest: Manifest; document: number; line: number }> = [];
  const errors: ManifestError[] = [];
  docs.forEach((doc, i) => {
    const document = i + 1;
    const line = lineCounter.linePos(doc.contents?.range[0] ?? doc.range[0]).line;
    if (doc.errors.length > 0) {
      errors.push({
        file,
        document,
        line,
        message: `YAML syntax: ${doc.errors[0]!.message.split('\n')[0]!.replace(/:$/, '')}`,
      });
      return;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return; // an empty document (e.g. a trailing `---`)
    const result = validateManifest(value);
    if (result.ok) {
      manifests.push({ manifest: result.manifest, document, line });
      return;
    }
    const meta = (value as { kind?: unknown; metadata?: { name?: unknown } }) ?? {};
    const label =
      typeof meta.kind === 'string' && typeof meta.metadata?.name === 'string'
        ? `${meta.kind} ${meta.metadata.name}: `
        : '';
    errors.push({ file, document, line, message: label + result.issues.join('; ') });
  });
  return { manifests, errors };
}

/** Every `*.yaml`/`*.yml` at or under `target`; dot-entries are skipped (ConfigMap mounts' `..data`). */
async function manifestFiles(target: string): Promise<string[]> {
  if (!(await stat(target)).isDirectory()) return [target];
  const entries = await readdir(target, { recursive: true });
  return entries
    .filter((rel) => /\.ya?ml$/i.test(rel) && !rel.split(path.sep).some((part) => part.startsWith('.')))
    .sort()
    .map((rel) => path.join(target, rel));
}

/**
 * Loads manifests from a file or a directory tree. Never throws for content problems: they are
 * in `errors`. Two documents declaring the same kind/namespace/name: the first wins.
 */
export async function loadManifests(target: string): Promise<ManifestSet> {
  const set: ManifestSet = { domains: [], mailboxes: [], secrets: [], errors: [], complete: true };
  let files: string[];
  try {
    files = await manifestFiles(target);
  } catch (err) {
    set.errors.push({ file: target, document: 0, line: 0, message: `cannot read: ${(err as Error).message}` });
    set.complete = false;
    return set;
  }
  const seen = new Map<string, string>();
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      // Removed between listing and reading (an editor's rename dance): the next pass sees it.
      set.errors.push({ file, document: 0, line: 0, message: `cannot read: ${(err as Error).message}` });
      continue;
    }
    const { manifests, errors } = parseManifests(text, file);
    set.errors.push(...errors);
    for (const { manifest, document, line } of manifests) {
      const id = refId(refOf(manifest));
      const first = seen.get(id);
      if (first) {
        set.errors.push({
          file,
          document,
          line,
          message: `${id} is already declared in ${first}; this copy is ignored`,
        });
        continue;
      }
      seen.set(id, `${file} document ${document}`);
      if (manifest.kind === 'Domain') set.domains.push(manifest);
      else if (manifest.kind === 'Mailbox') set.mailboxes.push(manifest);
      else set.secrets.push(manifest);
    }
  }
  if (set.errors.length > 0) set.complete = false;
  return set;
}
