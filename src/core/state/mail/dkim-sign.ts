import { loadMailAuth } from './mailauth-module.js';

type DkimSign = (typeof import('mailauth'))['dkimSign'];

/**
 * Prepends a DKIM-Signature (RFC 6376, relaxed/relaxed, rsa-sha256) made with the domain's key.
 * mailauth takes the keys from `signatureData` (its documented form; its type declarations list
 * flat fields instead). A message that cannot be signed goes out unsigned rather than not at all.
 */
export async function signMessage(
  raw: Buffer,
  key: { domain: string; selector: string; privateKeyPem: string },
  at: Date,
): Promise<{ raw: Buffer; signed: boolean; error?: string }> {
  const { dkimSign } = await loadMailAuth();
  const result = await dkimSign(raw, {
    canonicalization: 'relaxed/relaxed',
    signTime: at,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  } as unknown as Parameters<DkimSign>[1]);
  if (!result.signatures)
    return {
      raw,
      signed: false,
      error: result.errors.map((e) => String((e as { err?: Error }).err?.message ?? e)).join('; '),
    };
  return { raw: Buffer.concat([Buffer.from(result.signatures), raw]), signed: true };
}
