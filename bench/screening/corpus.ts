import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { screenMessage } from '../../src/core/state/screening/screen.js';
import type { SenderContext } from '../../src/core/state/screening/domains.js';
import type { Screening } from '../../src/core/state/screening/screening.schemas.js';
import { DEFAULT_HOLD_THRESHOLD } from '../../src/core/state/screening/weights.js';

// The screening corpus scored in one place: test/unit/screening-corpus.test.ts holds the scores
// to their floors, `make bench` prints them (bench/screening/run.ts). Fixtures live in
// test/fixtures/screening (hostile.yaml, ordinary.yaml, context.yaml).

export const SCREENING_DIR = (root: string) => path.join(root, 'test/fixtures/screening');

export interface CorpusMail {
  id: string;
  from: string;
  name?: string;
  subject: string;
  text?: string;
  html?: string;
}

export interface ScreenedMail {
  mail: CorpusMail;
  hostile: boolean;
  screening: Screening;
}

export function loadCorpus(dir: string): { context: SenderContext; hostile: CorpusMail[]; ordinary: CorpusMail[] } {
  const read = (file: string): unknown => parse(readFileSync(path.join(dir, file), 'utf8'));
  return {
    context: read('context.yaml') as SenderContext,
    hostile: read('hostile.yaml') as CorpusMail[],
    ordinary: read('ordinary.yaml') as CorpusMail[],
  };
}

export function screenCorpusMail(mail: CorpusMail, context: SenderContext): Screening {
  return screenMessage(
    {
      from: mail.from,
      fromDisplayName: mail.name ?? '',
      subject: mail.subject,
      bodyText: mail.text ?? null,
      bodyHtml: mail.html ?? null,
    },
    context,
  );
}

export function screenCorpus(dir: string): ScreenedMail[] {
  const { context, hostile, ordinary } = loadCorpus(dir);
  return [
    ...hostile.map((mail) => ({ mail, hostile: true, screening: screenCorpusMail(mail, context) })),
    ...ordinary.map((mail) => ({ mail, hostile: false, screening: screenCorpusMail(mail, context) })),
  ];
}

export interface ScreeningScore {
  hostile: number;
  ordinary: number;
  tp: number;
  fp: number;
  fn: number;
  precision: number;
  recall: number;
  /** The mails on the wrong side of the threshold, with their score and signals. */
  misses: string[];
}

/** Hostile mail at or above `threshold` is a true positive; ordinary mail there is a false positive. */
export function scoreScreening(results: readonly ScreenedMail[], threshold = DEFAULT_HOLD_THRESHOLD): ScreeningScore {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  const misses: string[] = [];
  for (const r of results) {
    const flagged = r.screening.score >= threshold;
    if (flagged && r.hostile) tp++;
    if (flagged === r.hostile) continue;
    if (flagged) fp++;
    else fn++;
    misses.push(
      `${r.hostile ? 'missed' : 'false alarm'} ${r.mail.id}: ${r.screening.score} [${r.screening.signals.join(', ')}]`,
    );
  }
  return {
    hostile: results.filter((r) => r.hostile).length,
    ordinary: results.filter((r) => !r.hostile).length,
    tp,
    fp,
    fn,
    precision: tp + fp === 0 ? 1 : tp / (tp + fp),
    recall: tp + fn === 0 ? 1 : tp / (tp + fn),
    misses,
  };
}
