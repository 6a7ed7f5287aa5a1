/**
 * Argument descriptions shared by several tools, written for a model. The rules they describe
 * live in the core (resolveMailbox, limits); these only explain them.
 */
export const MAILBOX_ADDRESS_ACTING =
  'Address of the mailbox to act on. With a mailbox token omit it (the token\'s own mailbox is used; naming another mailbox is error 400). ' +
  'With a domain token it is required (missing: error 400; not a mailbox of the token\'s domain: error 404).';

export const MAILBOX_ADDRESS_BY_ID =
  'Optional. When given, the message must belong to that mailbox (a mailbox token naming another mailbox: error 400). ' +
  'When omitted, a mailbox token sees its own mailbox and a domain token every mailbox of its domain.';

export const MESSAGE_ID = 'A messageId from list_messages, get_thread, wait_for_message or send_mail (opaque, starts with msg_).';

export const ERRORS_NOTE =
  'Errors come back as isError with text {"code": <HTTP status>, "errMsg": "..."}: 400 invalid argument, 403 token lacks the scope, ' +
  '404 not found or not visible to this token.';
