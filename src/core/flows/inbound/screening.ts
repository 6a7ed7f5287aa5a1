import { jsonValue } from '../../../storage/database.js';
import { policyOf } from '../policy/policy.store.js';
import { registrableDomain } from '../../state/screening/domains.js';
import { screenMessage, type ScreenedMessage } from '../../state/screening/screen.js';
import type { Screening } from '../../state/screening/screening.schemas.js';
import type { ScreeningContextRow } from '../../state/screening/screening.store.js';

/**
 * The screening of a message arriving in a mailbox and whether its policy holds it: every intake
 * path (port 25 direct and queued, local delivery) writes through InboundStore, which calls this.
 */
export function screenInbound(
  m: ScreenedMessage,
  context: ScreeningContextRow | undefined,
): { screening: Screening; held: boolean } {
  const address = context?.address ?? '';
  const knownDomains = (context?.contact_domains ?? [])
    .map((d) => registrableDomain(d))
    .filter((d): d is string => d !== null);
  const screening = screenMessage(m, {
    ownDomain: address.includes('@') ? address.slice(address.lastIndexOf('@') + 1) : null,
    knownDomains,
  });
  const holdAt = policyOf(jsonValue(context?.policy)).inboundScreening.holdAtScore;
  return { screening, held: holdAt !== null && screening.score >= holdAt };
}
