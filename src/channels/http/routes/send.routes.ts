import type { RouteSpec } from '../route.js';

export const sendRoutes: RouteSpec[] = [];
