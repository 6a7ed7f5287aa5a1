/**
 * The V8 flags the service ships with, read from package.json's `start` script (`node <flags>
 * --import … dist/src/cli.js serve`): the one place they are written down besides the image's
 * ENTRYPOINT, which test/unit/node-flags.test.ts holds to the same list.
 */
export function shippedNodeFlags(packageJson: string): string[] {
  const start = (JSON.parse(packageJson) as { scripts?: { start?: string } }).scripts?.start ?? '';
  const words = start.split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') return [];
  return words.slice(1).filter((w) => /^--max-(semi|old)-space-size=|^--optimize-for-size$/.test(w));
}
