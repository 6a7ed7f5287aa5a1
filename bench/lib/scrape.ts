// The service's own view of itself: GET /metrics (Prometheus text), as the soak and bench/smtp's burst scrape it.

/** One scrape of GET /metrics: the unlabelled-or-labelled sample values by series text. */
export async function scrapeMetrics(baseUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export const HEAP_USED = 'mailbox_process_nodejs_heap_size_used_bytes';
export const HEAP_TOTAL = 'mailbox_process_nodejs_heap_size_total_bytes';
export const EXTERNAL = 'mailbox_process_nodejs_external_memory_bytes';
export const QUEUE_DUE = 'mailbox_outbox_queue_depth{state="due"}';
export const QUEUE_SCHEDULED = 'mailbox_outbox_queue_depth{state="scheduled"}';
export const QUEUE_OLDEST_AGE = 'mailbox_outbox_queue_oldest_age_seconds';
