import { MikroORM } from '@mikro-orm/core';
import { ormOptions } from '../src/storage/orm.js';
const orm = await MikroORM.init({ ...ormOptions({}), migrations: { migrationsList: [] } } as any);
const sql = await orm.schema.getCreateSchemaSQL({ wrap: false });
console.log(sql);
await orm.close();
