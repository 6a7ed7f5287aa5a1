import type { Server } from 'node:net';

/** Binds or fails with one line naming the variable to change (docs/contract.md, Running it). */
export function listen(server: Server, port: number, host: string, envName: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(new Error(`cannot listen on ${host}:${port} (${err.code ?? err.message}); set ${envName} to a free port`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}
