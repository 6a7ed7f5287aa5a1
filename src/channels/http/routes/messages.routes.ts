import type { RouteSpec } from '../route.js';

export const messageRoutes: RouteSpec[] = [];
