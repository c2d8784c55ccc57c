// The bundle loop: bootstrap (once per process, retried until it works), then poll the
// policy bundle about once a minute with jitter, If-None-Match → 304. Every new bundle is
// indexed, persisted as the last good one, and swapped in. A failure to reach the control plane
// (network, 5xx, 408, 429) leaves the last good bundle in place (state "stale"); another refusal
// stops decisions (state "unavailable"). A refusal of the credential itself (401/403 from any
// runtime call, 404 from bootstrap or bundle) also forgets the bootstrap answer and the bundle,
// in memory and on disk; before this process ever bootstrapped it is fatal (onFatal: exit, so
// the supervisor reports "runtime bootstrap failed"). Failures retry sooner, backing off up to
// the interval; the loop keeps trying, so the same token working again brings it back.
import { hostname } from "node:os";
import type { BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import type { Logger } from "../../log/index.ts";
import { bundleFeatureProblem } from "./bundle-features.ts";
import { ControlPlaneError, type ControlPlaneClient, credentialRefusal, isTransient } from "../link/control-plane-client.ts";
import { BUNDLE_FILE, loadLastGood, saveLastGood } from "./last-good.ts";
import { indexBundle } from "./policy-index.ts";
import { BOOTSTRAP_FILE, forgetCredentialState, loadBootstrap, saveBootstrap } from "../state-dir.ts";
import type { ProxyStatus } from "./status.ts";

export const DEFAULT_POLL_MS = 60_000;
const FIRST_RETRY_MS = 500;
/**
 * How often a 304 rewrites the last good file only to record that the control plane confirmed
 * the bundle: often enough that `last_success` after a restart is close to the last contact,
 * rarely enough that an unchanged bundle is not rewritten and fsynced on every poll. The time
 * reported after a restart errs on the old side, never later than the real last contact.
 */
export const CONFIRMATION_PERSIST_MS = 10 * 60_000;

export type BundleLoopOptions = {
  client: ControlPlaneClient;
  status: ProxyStatus;
  log: Logger;
  stateDir: string;
  token: string;
  replicaId: string;
  credentialSyncRecipient: string;
  version: string;
  bundleVersion: BundleVersion;
  /** Override; otherwise what bootstrap says, otherwise 60 s. */
  pollIntervalMs: number | null;
  random?: () => number;
  now?: () => Date;
  /** The credential was refused before this process ever bootstrapped: the daemon should exit. */
  onFatal?: (cause: string) => void;
  /** A poll succeeded (200 or 304), or a last good bundle was reloaded: MCP servers are listed again. */
  onPolled?: () => void;
  /** Bootstrap succeeded (again): the shipper may resume. */
  onBootstrapped?: () => void;
};

export class BundleLoop {
  private etag: string | null = null;
  private bootstrapped = false;
  /** Whether bootstrap ever succeeded in this process (a later credential refusal is not fatal). */
  private everBootstrapped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private failures = 0;
  private running: Promise<void> | null = null;
  /** The times in the last good file, for the bundle in status.compiled; null when none is persisted. */
  private persisted: { fetchedAt: Date | null; confirmedAt: Date | null } | null = null;

  constructor(private readonly o: BundleLoopOptions) {}

  /** Reload the persisted state (bootstrap answer and last good bundle) before the first attempt. */
  reloadPersisted(): void {
    const b = loadBootstrap(this.o.stateDir, this.o.token);
    if (b) this.o.status.setBootstrap(b);
    const lg = loadLastGood(this.o.stateDir, this.o.token, this.o.bundleVersion);
    if (lg && (!b || lg.bundle.installation_id === b.installation.id)) {
      this.o.status.compiled = indexBundle(lg.bundle);
      this.etag = lg.etag;
      this.persisted = { fetchedAt: lg.fetchedAt, confirmedAt: lg.confirmedAt };
      // The last success known until the control plane answers: the one before the restart.
      // The state still says starting, then stale, until it does.
      this.o.status.lastSuccess = lg.confirmedAt;
      this.o.log.info("last good bundle reloaded", { policy_revision: lg.bundle.revision, fetched_at: lg.fetchedAt?.toISOString() ?? null, confirmed_at: lg.confirmedAt?.toISOString() ?? null });
    }
  }

  /** Run the first attempt now; later ones on the timer. Resolves after the first attempt. */
  async start(): Promise<void> {
    await this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Poll now (tests; also after SIGHUP). */
  async pollNow(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.tick();
  }

  private intervalMs(): number {
    return this.o.pollIntervalMs ?? (this.o.status.bootstrap ? this.o.status.bootstrap.poll_interval_seconds * 1000 : DEFAULT_POLL_MS);
  }

  private async tick(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      const ok = await this.attempt();
      this.failures = ok ? 0 : this.failures + 1;
      if (this.stopped) return;
      const base = this.intervalMs();
      const delay = ok ? base : Math.min(base, FIRST_RETRY_MS * 2 ** Math.min(this.failures - 1, 10));
      const jitter = 0.9 + 0.2 * (this.o.random ?? Math.random)();
      this.timer = setTimeout(() => void this.tick(), Math.round(delay * jitter));
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async attempt(): Promise<boolean> {
    const now = this.o.now ?? (() => new Date());
    const { status, log, client } = this.o;
    try {
      if (!this.bootstrapped) {
        const b = await client.bootstrap({ replica_id: this.o.replicaId, credential_sync_recipient: this.o.credentialSyncRecipient, version: this.o.version, hostname: hostname().slice(0, 255) });
        if (status.compiled && status.compiled.bundle.installation_id !== b.installation.id) {
          status.compiled = null; // a bundle of another installation: never decide on it
          this.etag = null;
          this.persisted = null;
        }
        status.setBootstrap(b);
        saveBootstrap(this.o.stateDir, this.o.token, b, now());
        client.replicaId = this.o.replicaId;
        this.bootstrapped = true;
        this.everBootstrapped = true;
        log.info("bootstrapped", { installation_id: b.installation.id, organization_id: b.organization_id, replica_id: this.o.replicaId, digest_key_id: b.digest_key.id });
        this.o.onBootstrapped?.();
      }
      const answer = await client.fetchBundle(this.o.bundleVersion, status.compiled ? this.etag : null);
      const at = now();
      if (answer.status === 200) {
        const problem = bundleFeatureProblem(answer.bundle, answer.etag, answer.serverVersion);
        if (problem) throw new Error(problem);
        await this.followDigestKey(answer.bundle, at);
        const compiled = indexBundle(answer.bundle);
        const previous = status.compiled?.revision ?? null;
        // In memory first: a revocation takes effect even when the state disk is full.
        status.compiled = compiled;
        this.etag = answer.etag;
        this.persist(answer.bundle, answer.etag, at);
        if (previous !== compiled.revision) {
          log.info("policy bundle loaded", {
            policy_revision: compiled.revision,
            tool_count: compiled.tools.size,
            policies: answer.bundle.policies.length,
            recipients: answer.bundle.recipients.length,
            skipped_policies: compiled.skipped,
          });
        }
      } else this.recordConfirmation(at);
      const wasState = status.state;
      status.succeeded(at);
      this.o.onPolled?.();
      if (wasState !== status.state) log.info("policy state", { state: status.state, policy_revision: status.compiled?.revision ?? null });
      return true;
    } catch (e) {
      if (this.credentialCheck(e)) return false;
      const message = e instanceof ControlPlaneError ? e.message : `policy bundle: ${(e as Error).message}`;
      const wasState = status.state;
      if (isTransient(e)) status.failed(message);
      else status.refused(message);
      if (wasState !== status.state || this.failures === 0) log.warn("control plane call failed", { state: status.state, error: message, status: e instanceof ControlPlaneError ? e.status : null });
      return false;
    }
  }

  /**
   * The bundle names the organization's current digest key: when this proxy holds another (an
   * admin rotated it), fetch the new one before the bundle is used. The retired key is dropped
   * first, so no record is digested with it once the control plane said it is retired: should
   * the fetch fail, decisions stop (unavailable, with the reason) until a retry gets the key.
   */
  private async followDigestKey(bundle: PolicyBundle, at: Date): Promise<void> {
    const { status, log } = this.o;
    const current = bundle.digest_key_id;
    if (!current || status.digestKey?.id === current) return;
    const retired = status.digestKey?.id ?? null;
    status.digestKey = null;
    const key = await this.o.client.digestKey();
    status.setDigestKey(key);
    log.info("digest key rotated", { digest_key_id: key.id, retired_digest_key_id: retired });
    try {
      if (status.bootstrap) saveBootstrap(this.o.stateDir, this.o.token, status.bootstrap, at);
    } catch (e) {
      // In use already; a restart with the control plane down would go back to the old key.
      log.warn("the new digest key could not be saved in the state directory", { error: (e as Error).message });
    }
  }

  /**
   * Save a new bundle as the last good one. A failure (full or read-only state disk) is logged
   * and leaves `persisted` null, so the next 304 tries again; the bundle is already in use.
   */
  private persist(bundle: PolicyBundle, etag: string | null, at: Date): void {
    try {
      saveLastGood(this.o.stateDir, this.o.token, { bundle, etag, fetchedAt: at, confirmedAt: at });
      this.persisted = { fetchedAt: at, confirmedAt: at };
    } catch (e) {
      this.persisted = null;
      this.o.log.warn("last good bundle not saved; it is in use, and saving is tried again at the next poll", { policy_revision: bundle.revision, error: (e as Error).message });
    }
  }

  /** A 304 confirmed the bundle: note it in the last good file, at most every CONFIRMATION_PERSIST_MS. */
  private recordConfirmation(at: Date): void {
    const compiled = this.o.status.compiled;
    if (!compiled) return;
    if (!this.persisted) return this.persist(compiled.bundle, this.etag, at);
    const last = this.persisted.confirmedAt;
    if (last && Math.abs(at.getTime() - last.getTime()) < CONFIRMATION_PERSIST_MS) return;
    try {
      saveLastGood(this.o.stateDir, this.o.token, { bundle: compiled.bundle, etag: this.etag, fetchedAt: this.persisted.fetchedAt, confirmedAt: at });
      this.persisted = { ...this.persisted, confirmedAt: at };
    } catch (e) {
      // The poll itself succeeded; only the time a restart would report stays older.
      this.o.log.warn("last good bundle: its confirmation could not be recorded", { error: (e as Error).message });
    }
  }

  /**
   * For any runtime call's failure (bundle loop, heartbeat, shipper, claims): when the control
   * plane refused the credential, forget the bootstrap answer and the bundle (memory and disk),
   * refuse every decision, log one line naming the cause. True when it did.
   */
  credentialCheck(e: unknown): boolean {
    const cause = credentialRefusal(e);
    if (!cause) return false;
    const { status, log } = this.o;
    const first = status.credentialError === null;
    status.credentialRefused(cause);
    this.etag = null;
    this.persisted = null;
    this.bootstrapped = false;
    this.o.client.replicaId = null;
    forgetCredentialState(this.o.stateDir, [BOOTSTRAP_FILE, BUNDLE_FILE]);
    if (first) log.error("runtime credential refused; every decision is refused until the control plane accepts the token again", { error: cause, state: status.state });
    if (!this.everBootstrapped) this.o.onFatal?.(cause);
    return true;
  }
}
