import type { Kysely } from 'kysely';
import { describe, expectTypeOf, it } from 'vitest';
import type { Col, Narrow, Row } from '../../src/storage/rows.js';
import type { Sql } from '../../src/storage/database.js';
import type { DB } from '../../src/storage/schema.js';

// Checked by `make lint` (tsc): a row type is derived from src/storage/schema.ts, so naming a column
// the migrations never created, or narrowing one a row does not have, does not compile.
describe('row types derive from the generated schema', () => {
  it('Row picks the named columns with the types a select returns', () => {
    expectTypeOf<Row<'message', 'id' | 'subject' | 'deleted_at'>>().toEqualTypeOf<{
      id: string;
      subject: string;
      deleted_at: string | null;
    }>();
    expectTypeOf<Col<'mailbox', 'inbound_count'>>().toEqualTypeOf<string | number>();
    type Narrowed = Narrow<Row<'message', 'id' | 'direction'>, { direction: 'inbound' | 'outbound' }>;
    expectTypeOf<Narrowed['direction']>().toEqualTypeOf<'inbound' | 'outbound'>();
    expectTypeOf<Narrowed['id']>().toEqualTypeOf<string>();
  });

  it('refuses columns and tables the schema does not have', () => {
    // @ts-expect-error a column the table does not have
    expectTypeOf<Row<'message', 'no_such_column'>>().not.toBeNever();
    // @ts-expect-error a table the migrations never created
    expectTypeOf<Row<'no_such_table'>>().not.toBeNever();
    // @ts-expect-error narrowing a column the row does not have
    expectTypeOf<Narrow<Row<'message', 'id'>, { subject: string }>>().not.toBeNever();
  });

  it('the core’s Kysely handle is typed with the schema', () => {
    expectTypeOf<Sql>().toEqualTypeOf<Kysely<DB>>();
  });
});
