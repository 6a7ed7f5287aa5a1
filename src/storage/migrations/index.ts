import { Migration20261122000000Initial } from './20261122000000-initial.js';
import { Migration20261201000000SmtpTransport } from './20261201000000-smtp-transport.js';
import { Migration20261220000000BlobReferences } from './20261220000000-blob-references.js';

/** Every migration in order; listed explicitly so the built image needs no file globbing. */
export const migrations = [
  { name: 'Migration20261122000000Initial', class: Migration20261122000000Initial },
  { name: 'Migration20261201000000SmtpTransport', class: Migration20261201000000SmtpTransport },
  { name: 'Migration20261220000000BlobReferences', class: Migration20261220000000BlobReferences },
];
