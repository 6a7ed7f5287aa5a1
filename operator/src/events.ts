import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from '../../src/core/base/logger.js';
import { API_VERSION, COMPONENT } from './names.js';
import { apiMessage } from './kube.js';

export interface EventTarget {
  kind: string;
  namespace: string;
  name: string;
  uid?: string | undefined;
  apiVersion?: string;
}

/**
 * Kubernetes Events for notable changes (Ready transitions, secrets written, finalization,
 * invalid specs), shown by `kubectl describe` and `kubectl get events`. core/v1 Events work on
 * every cluster version. Best effort: a failed Event is logged, never retried or thrown.
 */
export class EventRecorder {
  constructor(
    private readonly core: CoreV1Api,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  async emit(target: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    try {
      await this.core.createNamespacedEvent({
        namespace: target.namespace,
        body: {
          metadata: { generateName: `${target.name}.`, namespace: target.namespace },
          involvedObject: {
            apiVersion: target.apiVersion ?? API_VERSION,
            kind: target.kind,
            name: target.name,
            namespace: target.namespace,
            ...(target.uid ? { uid: target.uid } : {}),
          },
          type,
          reason,
          // The API server caps Event messages at 1 KiB of meaning; conditions keep the full text.
          message: message.slice(0, 1024),
          source: { component: COMPONENT },
          reportingComponent: COMPONENT,
          reportingInstance: this.instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.log.warn('operator.event_failed', {
        kind: target.kind,
        namespace: target.namespace,
        name: target.name,
        reason,
        message: apiMessage(err),
      });
    }
  }
}
