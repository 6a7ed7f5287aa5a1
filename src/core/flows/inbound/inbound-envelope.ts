/** The SMTP envelope of a message arriving on port 25, as the intake accepted it. */
export interface InboundEnvelope {
  /** MAIL FROM; empty for the null sender of bounces (RFC 5321 §4.5.5). */
  mailFrom: string;
  recipients: readonly InboundRecipient[];
  clientAddress: string;
  helo: string;
  tls: boolean;
}

/** A recipient RCPT TO accepted: the mailbox it reaches, and whether that mailbox has a storage quota. */
export interface InboundRecipient {
  address: string;
  mailboxId: string;
  /** Queued intake reserves quota only in mailboxes that have one (absent: reserve). */
  quotaLimited?: boolean;
}
