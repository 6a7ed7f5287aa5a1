import type { RouteSpec } from '../route.js';

export const tokenRoutes: RouteSpec[] = [];
