import nodemailer from 'nodemailer';
import { generateKeyPairSync } from 'node:crypto';
import { dkimSign } from 'mailauth';
import { deliveredAfter } from '../support/intake-queue.js';

/**
 * nodemailer as the remote MTA delivering to our MX port: raw bytes, opportunistic STARTTLS.
 * Resolves once the message is stored (for a server of this process; see deliveredAfter).
 */
export async function deliverToMx(
  port: number,
  envelope: { from: string; to: string | string[] },
  raw: string | Buffer,
): Promise<{ response: string }> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    name: 'peer.sender.example',
    tls: { rejectUnauthorized: false },
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 60_000,
  });
  try {
    const info = await transport.sendMail({ envelope: { from: envelope.from, to: envelope.to }, raw });
    await deliveredAfter(port, info.response); // queued intake: stored behind the 250
    return { response: info.response };
  } finally {
    transport.close();
  }
}

/** The reply code and text of a refused delivery. */
export async function mxRefusal(
  port: number,
  envelope: { from: string; to: string | string[] },
  raw: string | Buffer,
): Promise<string> {
  try {
    const ok = await deliverToMx(port, envelope, raw);
    return `accepted: ${ok.response}`;
  } catch (err) {
    return (err as { response?: string }).response ?? (err as Error).message;
  }
}

/** A DKIM key for a sending domain, with the TXT record its selector must publish. */
export function dkimKey(domain: string, selector = 'sel') {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  return {
    name: `${selector}._domainkey.${domain}`,
    txt: `v=DKIM1; k=rsa; p=${p}`,
    async sign(raw: string): Promise<string> {
      // mailauth reads the keys from signatureData (its README), whatever its type declarations say.
      const { signatures } = await dkimSign(raw, {
        signatureData: [
          { signingDomain: domain, selector, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) },
        ],
      } as any);
      return signatures + raw;
    },
  };
}
