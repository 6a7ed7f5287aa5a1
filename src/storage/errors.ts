/** True when the database cannot be reached right now (connection refused, reset, shutting down). */
export function isStorageUnavailable(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code !== undefined && (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08006', '08001', '08003'] as string[]).includes(code);
}

/** PostgreSQL unique_violation, optionally on one named constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; message?: string };
  if (e?.code !== '23505') return false;
  return constraint === undefined || e.constraint === constraint || (e.message ?? '').includes(constraint);
}
