// make db-types: writes src/storage/schema.ts (the Kysely `DB` type) from a scratch PostgreSQL
// database migrated with src/storage/migrations; the database is dropped afterwards.
import { writeFileSync } from 'node:fs';
import { renderDatabaseTypes, SCHEMA_FILE, withMigratedScratchDatabase } from './db-types-lib.js';

const text = await withMigratedScratchDatabase((url) => renderDatabaseTypes(url));
writeFileSync(SCHEMA_FILE, text);
console.log(`wrote ${SCHEMA_FILE}`);
