import { Migration20261122000000Initial } from './20261122000000-initial.js';

/** Every migration in order; listed explicitly so the built image needs no file globbing. */
export const migrations = [
  { name: 'Migration20261122000000Initial', class: Migration20261122000000Initial },
];
