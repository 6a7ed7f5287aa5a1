/**
 * mailauth, imported once by the roles that use it. Its index loads SPF, DMARC, ARC and BIMI with
 * an X.509 stack: 8–13 MB of idle RSS the api and realtime roles never need (docs/design/memory.md),
 * and about 300 ms of module evaluation on one event loop. The smtp and worker roles therefore
 * load it at start (runtime.ts), before they accept anything: left to the first inbound message or
 * signature, that evaluation would stall every session and delivery of the process behind it.
 */
type MailAuth = typeof import('mailauth');

let loading: Promise<MailAuth> | null = null;

export function loadMailAuth(): Promise<MailAuth> {
  return (loading ??= import('mailauth'));
}
