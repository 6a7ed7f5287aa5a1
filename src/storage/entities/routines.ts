import { Routine } from '@mikro-orm/core';

/**
 * A message's search vector (migration 20270201000000): the subject weighs A, the first 100 000
 * characters of the body B. The search indexer and bulk loaders call it; declared here so the
 * schema comparison knows the function is ours.
 */
export const messageSearchVector = new Routine({
  name: 'message_search_vector',
  type: 'function',
  language: 'sql',
  deterministic: true,
  params: { subject: { type: 'text' }, body_text: { type: 'text' }, body_html: { type: 'text' } },
  returns: { runtimeType: 'string', columnType: 'tsvector' },
  body: `select setweight(to_tsvector('simple'::regconfig, coalesce(subject, '')), 'A')
          || setweight(to_tsvector('simple'::regconfig, left(coalesce(body_text, body_html, ''), 100000)), 'B')`,
});
