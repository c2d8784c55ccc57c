// Reaching the model endpoint before the first chat (issue 19): when a bundle brings a model
// profile whose endpoint this process has not tried yet (at boot, and when the profile or its
// endpoint changes), the proxy connects to it once: DNS, TCP and TLS (with the same trusted
// CAs as model calls), then a GET of the base URL. No chat completion is asked for, no key is
// sent, nothing is billed. Any HTTP answer means the endpoint was reached; a failed connection
// is noted with its error. Either way the result goes into the same table as model calls'
// attempts (endpoint-attempts.ts), so the heartbeat reports it and the control plane's
// readiness knows before anyone chats. A model call's own, newer attempt is never overwritten.
import type { EndpointAttempts } from "./endpoint-attempts.ts";

export const PROBE_TIMEOUT_MS = 10_000;

export type ProbedProfile = { id: string; endpoint: string };

export class EndpointProbe {
  /** profile id → the endpoint last probed for it. */
  private readonly probed = new Map<string, string>();

  constructor(
    private readonly o: {
      attempts: EndpointAttempts;
      ca: string[] | null;
      fetchImpl?: typeof fetch;
      timeoutMs?: number;
      log?: { info(event: string, fields?: Record<string, unknown>): void };
    },
  ) {}

  /** Probes the bundle's profile when this (profile, endpoint) has not been probed yet. */
  async sync(profile: ProbedProfile | null | undefined): Promise<void> {
    if (!profile?.endpoint || this.probed.get(profile.id) === profile.endpoint) return;
    this.probed.set(profile.id, profile.endpoint);
    const started = new Date();
    const error = await this.reach(profile.endpoint);
    const newer = this.o.attempts.get(profile.id);
    if (newer && new Date(newer.at) > started) return;
    this.o.attempts.record(profile.id, error);
    this.o.log?.info(error === null ? "model endpoint reached" : "model endpoint unreachable", { profile: profile.id, ...(error === null ? {} : { error }) });
  }

  /** null when the endpoint answered anything; else the connection's error. */
  private async reach(endpoint: string): Promise<string | null> {
    const init: RequestInit & { tls?: { ca?: string[] } } = { method: "GET", redirect: "manual", signal: AbortSignal.timeout(this.o.timeoutMs ?? PROBE_TIMEOUT_MS) };
    if (this.o.ca) init.tls = { ca: this.o.ca };
    try {
      const res = await (this.o.fetchImpl ?? fetch)(endpoint, init);
      await res.body?.cancel().catch(() => {});
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  }
}
