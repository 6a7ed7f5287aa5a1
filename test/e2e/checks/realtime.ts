import { realtimeClient, serviceAddress, smtpSend } from '../support/clients.js';
import type { E2eEnv } from '../support/environment.js';
import { figure } from '../support/figures.js';
import { podsOf, portForward, waitFor, type Forward } from '../support/kubectl.js';
import type { Reach } from './channels.js';
import type { Identity } from './operator.js';

/**
 * A Socket.IO client on EACH realtime replica (`kubectl port-forward pod/…`: the way to pick one
 * replica behind a Service) plus one through the realtime Service's NodePort; mail then arrives on
 * port 25 (an smtp pod stores it) and every client must get its message.received (the event bus
 * across pods, over Redis).
 */
export async function realtimeFanOut(env: E2eEnv, reach: Reach, agent: Identity): Promise<void> {
  const pods = (await podsOf(env.namespace, 'app.kubernetes.io/component=realtime')).filter(
    (p) => p.ready && !p.deleting,
  );
  const forwards: Forward[] = [];
  const clients: Array<{ via: string; events: any[]; close(): void }> = [];
  try {
    for (const pod of pods) {
      const f = await portForward(env.namespace, `pod/${pod.name}`, 8080);
      forwards.push(f);
      const c = await realtimeClient(`http://127.0.0.1:${f.port}`, agent.token);
      clients.push({ via: pod.name, events: c.events, close: () => c.socket.close() });
    }
    const viaService = await serviceAddress(env, env.name('realtime'), 'http');
    const s = await realtimeClient(`http://${viaService}`, agent.token);
    clients.push({ via: `service ${viaService}`, events: s.events, close: () => s.socket.close() });

    const subject = `e2e realtime ${Date.now()}`;
    const started = Date.now();
    await smtpSend(reach.mx, { from: 'events@outside.example', to: agent.address, subject, text: 'fan out' });
    const got = async () =>
      clients.filter((c) => c.events.some((e) => e.name === 'message.received' && e.data?.subject === subject));
    const all = await waitFor(
      'every client got message.received',
      async () => ((await got()).length === clients.length ? true : undefined),
      20_000,
    ).catch(() => false);
    const received = (await got()).length;
    figure({
      suite: 'realtime',
      name: `Socket.IO clients on each of ${pods.length} realtime pods + 1 via the Service receiving mail that arrived on port 25`,
      value: `${received}/${clients.length}${all ? ` in ${(Date.now() - started) / 1000} s` : ''}`,
      target: `${clients.length}/${clients.length}`,
      pass: received === clients.length && pods.length >= 2,
    });
  } finally {
    for (const c of clients) c.close();
    for (const f of forwards) f.stop();
  }
}
