import dgram from 'node:dgram';

export type Records = Record<
  string,
  {
    A?: string[];
    AAAA?: string[];
    TXT?: string[];
    MX?: { priority: number; exchange: string }[];
    /** Answer SERVFAIL (a broken zone) instead of records. */
    servfail?: boolean;
    /** Answer only once this settles (a slow name server, to hold a lookup in flight). */
    held?: Promise<unknown>;
  }
>;

const TYPES: Record<number, 'A' | 'AAAA' | 'TXT' | 'MX'> = { 1: 'A', 28: 'AAAA', 16: 'TXT', 15: 'MX' };

/**
 * A local authoritative DNS server over UDP for tests and benchmarks: SPF, DKIM and DMARC records and MX
 * hosts resolve from `records`, everything else is NXDOMAIN. The service reaches it through
 * DNS_SERVERS, exactly as it would reach a real one.
 */
export async function startDnsStub(records: Records): Promise<{
  server: string;
  records: Records;
  queries: number;
  asked: Map<string, number>;
  close(): Promise<void>;
}> {
  const socket = dgram.createSocket('udp4');
  let queries = 0;
  const asked = new Map<string, number>();
  const reply = (msg: Buffer, rinfo: dgram.RemoteInfo) => {
    try {
      socket.send(answer(msg, records), rinfo.port, rinfo.address);
    } catch {
      /* malformed query: no answer */
    }
  };
  socket.on('message', (msg, rinfo) => {
    queries++;
    let held: Promise<unknown> | undefined;
    try {
      const { name } = readName(msg, 12);
      asked.set(name, (asked.get(name) ?? 0) + 1);
      held = records[name]?.held;
    } catch {
      /* malformed: answered (or not) below */
    }
    if (held) void held.finally(() => reply(msg, rinfo));
    else reply(msg, rinfo);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    records,
    /** Queries received so far (a caching resolver asks less). */
    get queries() {
      return queries;
    },
    /** Questions received so far by name. */
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (msg[i]! !== 0) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString('latin1'));
    i += 1 + msg[i]!;
  }
  return { name: labels.join('.').toLowerCase(), end: i + 1 };
}

const encodeName = (name: string): Buffer =>
  Buffer.concat([
    ...name
      .replace(/\.$/, '')
      .split('.')
      .filter(Boolean)
      .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
    Buffer.from([0]),
  ]);

function rdata(type: 'A' | 'AAAA' | 'TXT' | 'MX', value: any): Buffer {
  if (type === 'A') return Buffer.from(String(value).split('.').map(Number));
  if (type === 'AAAA') {
    const parts = String(value).split('::');
    const head = parts[0] ? parts[0].split(':') : [];
    const tail = parts[1] ? parts[1].split(':') : [];
    const groups = [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail];
    return Buffer.concat(
      groups.map((g) => {
        const b = Buffer.alloc(2);
        b.writeUInt16BE(parseInt(g, 16));
        return b;
      }),
    );
  }
  if (type === 'TXT') {
    const bytes = Buffer.from(String(value), 'utf8');
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length || i === 0; i += 255) {
      const part = bytes.subarray(i, i + 255);
      chunks.push(Buffer.from([part.length]), part);
      if (bytes.length === 0) break;
    }
    return Buffer.concat(chunks);
  }
  const pref = Buffer.alloc(2);
  pref.writeUInt16BE(value.priority);
  return Buffer.concat([pref, encodeName(value.exchange)]);
}

function answer(query: Buffer, records: Records): Buffer {
  const id = query.readUInt16BE(0);
  const rd = query.readUInt16BE(2) & 0x0100;
  const { name, end } = readName(query, 12);
  const qtype = query.readUInt16BE(end);
  const question = query.subarray(12, end + 4);
  const entry = records[name];
  const type = TYPES[qtype];
  const values: any[] = entry && type && !entry.servfail ? (entry[type] ?? []) : [];
  const rcode = entry?.servfail ? 2 : entry ? 0 : 3; // SERVFAIL when asked to, NXDOMAIN for names we do not know
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x8000 | 0x0400 | rd | 0x0080 | rcode, 2); // QR, AA, RD (copied), RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(values.length, 6);
  const answers = values.map((v) => {
    const data = rdata(type!, v);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question
    rr.writeUInt16BE(qtype, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(60, 6);
    rr.writeUInt16BE(data.length, 10);
    return Buffer.concat([rr, data]);
  });
  return Buffer.concat([header, question, ...answers]);
}
