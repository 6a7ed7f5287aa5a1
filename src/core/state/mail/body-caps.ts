/**
 * Body caps. The JSON limit (MAX_JSON_BYTES) bounds HTTP already; these bound every channel,
 * SMTP and MCP included, and keep one message row reasonable: a sent body is refused above them,
 * a received one is cut to them when it is parsed.
 */
export const MAX_SUBJECT_CHARS = 998; // RFC 5322 §2.1.1 line limit
export const MAX_BODY_CHARS = 1_048_576;
