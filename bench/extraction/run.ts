import { table } from '../lib/measure.js';
import { EXTRACTION_DIR, extractCorpus, REPLIES_DIR, scoreCodes, scoreLinks, scoreReplies } from './corpus.js';

// bench/extraction: the extraction figures, printed by `make bench` (no database):
// one-time code precision and recall and link classification on test/fixtures/extraction, and
// quote stripping (replyText exact) on test/fixtures/replies. The unit tests hold the same scores
// to their floors (precision and recall ≥ 0.95, replyText exact ≥ 0.90).
const ROOT = process.cwd(); // make runs it from the repository root

async function main(): Promise<void> {
  const { expected, results } = await extractCorpus(EXTRACTION_DIR(ROOT));
  const codes = scoreCodes(expected, results);
  const links = scoreLinks(expected, results);
  const replies = scoreReplies(REPLIES_DIR(ROOT));
  console.log(`\nbench/extraction — ${codes.mails} mails, ${replies.replies} replies\n`);
  console.log(
    table([
      {
        figure: 'one-time codes: precision',
        value: codes.precision.toFixed(3),
        detail: `tp ${codes.tp}, fp ${codes.fp}`,
        target: '≥ 0.95',
      },
      {
        figure: 'one-time codes: recall',
        value: codes.recall.toFixed(3),
        detail: `tp ${codes.tp}, fn ${codes.fn}`,
        target: '≥ 0.95',
      },
      {
        figure: 'links found with their kind',
        value: `${links.found}/${links.listed}`,
        detail: 'verification / unsubscribe / other',
        target: 'all',
      },
      {
        figure: 'replyText exact (quote stripping)',
        value: replies.share.toFixed(3),
        detail: `${replies.exact}/${replies.replies}`,
        target: '≥ 0.90',
      },
    ]),
  );
  for (const m of [...codes.misses, ...links.misses, ...replies.wrong]) console.log(`  ${m}`);
  const met = codes.precision >= 0.95 && codes.recall >= 0.95 && links.found === links.listed && replies.share >= 0.9;
  console.log(`target: ${met ? 'MET' : 'NOT MET'}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
