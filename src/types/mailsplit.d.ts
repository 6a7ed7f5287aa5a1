// The part of mailsplit's API used here (it ships no types): split a message into MIME nodes,
// re-encode the matching leaf nodes, join the nodes back into bytes.
declare module 'mailsplit' {
  import type { Transform } from 'node:stream';

  export interface MimeNode {
    type: 'node';
    multipart: string | false;
    contentType: string | false;
    encoding: string | false;
  }

  export class Splitter extends Transform {
    constructor(options?: { ignoreEmbedded?: boolean; maxHeadSize?: number });
  }
  export class Joiner extends Transform {}
  export class Rewriter extends Transform {
    constructor(filter: (node: MimeNode) => boolean);
    on(event: 'node', listener: (data: { node: MimeNode; decoder: Transform; encoder: Transform }) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
