import type { RouteSpec } from '../route.js';

export const domainRoutes: RouteSpec[] = [];
