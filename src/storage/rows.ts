import type { Selectable } from 'kysely';
import type { DB } from './schema.js';

/**
 * The columns `C` of table `T` as a select returns them, derived from the generated schema
 * (src/storage/schema.ts, `make db-types`) so that a row type cannot drift from the table it reads.
 */
export type Row<T extends keyof DB, C extends keyof Selectable<DB[T]> = keyof Selectable<DB[T]>> = Pick<
  Selectable<DB[T]>,
  C
>;

/** The type of one column as a select returns it (for a column read under another name, `x as y`). */
export type Col<T extends keyof DB, C extends keyof Selectable<DB[T]>> = Selectable<DB[T]>[C];

/**
 * `R` with some of its columns typed narrower than the schema says (a varchar holding one of a few
 * words); only columns `R` has can be narrowed.
 */
export type Narrow<R, N extends { [K in keyof N]: K extends keyof R ? unknown : never }> = Omit<R, keyof N> & N;
