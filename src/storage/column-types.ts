import type { ColumnType } from 'kysely';

/**
 * Column types as our two engines return them (src/storage/schema.ts uses these, `make db-types`):
 * timestamps come back as text on pg and PGlite alike, int8 as a string on pg and a number on
 * PGlite, jsonb parsed. Read them through `ms`, `date` and `num` (database.ts).
 */
export type DbTimestamp = ColumnType<string, Date | string, Date | string>;
export type DbInt8 = ColumnType<string | number, number | bigint | string, number | bigint | string>;
/** A jsonb column holds any JSON value; readers narrow it. */
export type DbJson = ColumnType<unknown, string, string>;
