import type { RouteSpec } from '../route.js';

export const loginRoutes: RouteSpec[] = [];
