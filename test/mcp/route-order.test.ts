import { describe, expect, it } from 'vitest';
import Router from '@koa/router';
import { allRoutes } from '../../src/channels/http/routes/index.js';

// koa-router runs every matching route in registration order and the first handler answers,
// so a literal path registered after a parameterised one (GET /api/messages/wait after
// GET /api/messages/:messageId) would never be reached. This checks the whole route table,
// not just the wait route, so a future literal route cannot be shadowed either.

describe('route table order', () => {
  it('every route is the first match for its own literal path', () => {
    const router = new Router();
    for (const r of allRoutes) router.register(r.path, [r.method], () => undefined);
    const shadowed = allRoutes
      .map((r) => ({ r, concrete: r.path.replace(/:([A-Za-z]+)/g, 'x_$1') }))
      .map(({ r, concrete }) => ({
        key: `${r.method} ${r.path}`,
        first: router.match(concrete, r.method).pathAndMethod[0]?.path,
      }))
      .filter(({ key, first }) => key.split(' ')[1] !== first)
      .map(({ key, first }) => `${key} is answered by ${first}`);
    expect(shadowed).toEqual([]);
  });

  it('GET /api/messages/wait is declared before GET /api/messages/:messageId', () => {
    const keys = allRoutes.map((r) => `${r.method} ${r.path}`);
    expect(keys.indexOf('GET /api/messages/wait')).toBeGreaterThanOrEqual(0);
    expect(keys.indexOf('GET /api/messages/wait')).toBeLessThan(keys.indexOf('GET /api/messages/:messageId'));
  });
});
