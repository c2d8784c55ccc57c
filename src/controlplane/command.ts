// `svc controlplane serve | migrate | bootstrap-admin`.
import { loggableError } from "./db/errors.ts";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CommandFailure, command } from "../command/index.ts";
import { SvcError } from "../contract/errors.ts";
import { type Logger, createLogger } from "../log/index.ts";
import { redactUrlCredentials } from "../contract/egress.ts";
import { NO_TRACING, startTracing, type Tracing, tracingConfigUrl } from "../tracing/index.ts";
import { BODY_LIMITS, createApp, gateOf } from "./app.ts";
import { bootstrapOwner, generatePassword } from "./auth/bootstrap.ts";
import { type ServeSettings, dataDirFrom, ensureDataDir, loadKms, serveSettings } from "./config.ts";
import { lastMigrationTag, openStore } from "./db/index.ts";
import { selfReplica, startReplicaHeartbeat } from "./replicas/service.ts";
import { StoreFromNewerRelease } from "./db/schema-history.ts";
import type { ControlPlaneDeps } from "./deps.ts";
import { disableUnusableKeys } from "./audit-keys/service.ts";
import { keyFingerprint } from "../contract/audit-chain.ts";
import { startAdoption } from "./audit/adoption.ts";
import { startRollupFold } from "./audit/rollup-fold.ts";
import { startCheckpointScheduler } from "./audit-chain/scheduler.ts";
import { startVerifySchedule } from "./audit-chain/verify-schedule.ts";
import { ensureSigningKey } from "./audit-chain/signing-key.ts";
import { startRetentionScheduler } from "./audit/retention-runs.ts";
import { startRefusalFlush } from "./audit/refusals.ts";
import { startDirectorySyncScheduler } from "./directory-sync/scheduler.ts";
import { startSinkDelivery } from "./sinks/deliver.ts";
import type { SqliteStore } from "./db/sqlite.ts";
import { ControlPlaneMetrics } from "./metrics/index.ts";

/** `svc controlplane serve|migrate` on a store a newer release migrated (docs/upgrade.md). */
export const EXIT_STORE_FROM_NEWER_RELEASE = 3;

const dataDirArg = { type: "string", description: "state directory (env SVC_CP_DATA_DIR)", valueHint: "dir" } as const;

async function openDeps(flags: { dataDir?: string; listen?: string; publicUrl?: string; tlsCert?: string; tlsKey?: string }) {
  const settings = serveSettings(flags);
  ensureDataDir(settings.dataDir);
  const log = createLogger("controlplane");
  const { kms, created, warnings } = loadKms(settings.dataDir, process.env, settings.database);
  if (created) log.warn("generated a master key; back it up apart from the database, or set SVC_CP_MASTER_KEY", { file: created });
  for (const w of warnings) log.warn(w);
  const store = await openMigratedStore(settings, log);
  const deps: ControlPlaneDeps = { db: store.db, kms, config: settings.config, now: Date.now, log };
  return { settings, deps, store };
}

/** A store from a newer release (schema-history.ts) is refused with its own exit code; other failures name the setting. */
function migrationFailure(verb: "open" | "migrate", location: string, e: unknown): CommandFailure {
  if (e instanceof StoreFromNewerRelease) return new CommandFailure(`cannot start on ${location}: ${e.message}`, EXIT_STORE_FROM_NEWER_RELEASE);
  return new CommandFailure(`cannot ${verb} the database ${location}: ${loggableError(e)}; check SVC_CP_DATABASE`);
}

/** Opens the configured store and applies pending migrations; an unreachable database is one clear line. */
async function openMigratedStore(settings: ServeSettings, log: Logger) {
  const store = openStore(settings.database, { maxConnections: settings.databasePool, log });
  try {
    const applied = await store.migrate();
    if (applied) log.info("migrations applied", { count: applied, database: store.location });
    return store;
  } catch (e) {
    await store.close().catch(() => undefined);
    throw migrationFailure("open", store.location, e);
  }
}

/** Tracing from the OTEL_* variables (off unless an endpoint is set); a bad value stops the start, named. */
function controlPlaneTracing(log: Logger): Tracing {
  let tracing: Tracing;
  try {
    tracing = startTracing(process.env, "svc-controlplane");
  } catch (e) {
    throw new CommandFailure(`cannot start OpenTelemetry tracing: ${(e as Error).message}; fix the variable or unset OTEL_EXPORTER_OTLP_ENDPOINT`);
  }
  if (tracing !== NO_TRACING) log.info("tracing on", { endpoint: redactUrlCredentials(tracingConfigUrl(process.env)) });
  return tracing;
}

const serve = command({
  meta: { name: "serve", description: "Run the control plane: admin API, runtime API and console" },
  args: {
    listen: { type: "string", description: "host:port to listen on (env SVC_CP_LISTEN, default 127.0.0.1:8420)", valueHint: "host:port" },
    "data-dir": dataDirArg,
    "public-url": { type: "string", description: "URL users reach the service at (env SVC_CP_PUBLIC_URL)", valueHint: "url" },
    "tls-cert": { type: "string", description: "PEM certificate file (env SVC_CP_TLS_CERT)", valueHint: "file" },
    "tls-key": { type: "string", description: "PEM private key file (env SVC_CP_TLS_KEY)", valueHint: "file" },
  },
  examples: ["svc controlplane serve --listen 127.0.0.1:8420 --data-dir /var/lib/svc"],
  async run({ args }) {
    const { settings, deps, store } = await openDeps({ listen: args.listen, dataDir: args["data-dir"], publicUrl: args["public-url"], tlsCert: args["tls-cert"], tlsKey: args["tls-key"] });
    // Keys registered before low-order recipients were refused: disabled, saying why.
    await disableUnusableKeys(deps);
    // This process as a control-plane replica; what the others can express is read before the
    // first bundle is served (a rolling upgrade narrows it, issue 29).
    const replica = startReplicaHeartbeat({ ...deps, replica: (deps.replica = selfReplica(lastMigrationTag(store.dialect))) });
    await replica.ready;
    deps.tracing = controlPlaneTracing(deps.log);
    const checkpointer = "checkpointer" in store ? (store as SqliteStore).checkpointer : null;
    if (checkpointer) (deps.metrics ??= new ControlPlaneMetrics()).watchCheckpoints(() => checkpointer.health());
    const app = createApp(deps);
    // Bun.serve with the gate in front (http/request-gate.ts): bodies are read by the gate, after
    // authentication and within each route's limit; Bun's own cap only backs it up.
    const gate = gateOf(app);
    const server = Bun.serve({
      hostname: settings.host,
      port: settings.port,
      maxRequestBodySize: BODY_LIMITS.auditBatch + 1024,
      // Bun closes a connection that sends and receives nothing for idleTimeout seconds, a
      // request whose handler is still working included (default 10): a slow answer (a store
      // under load retrying a serializable transaction, a large verification) reached the
      // browser as an empty response instead of arriving late.
      idleTimeout: 120,
      fetch: gate,
      ...(settings.tls ? { tls: { cert: Bun.file(settings.tls.cert), key: Bun.file(settings.tls.key) } } : {}),
    });
    deps.log.info("listening", { url: settings.config.publicUrl, port: server.port ?? settings.port, database: store.dialect, version: deps.replica.version, replica: deps.replica.id });
    const stopDirectorySync = startDirectorySyncScheduler(deps);
    const stopCheckpoints = startCheckpointScheduler(deps);
    const stopSinks = startSinkDelivery(deps);
    const stopRetention = startRetentionScheduler(deps);
    const stopRefusals = startRefusalFlush(deps);
    const stopAdoption = startAdoption(deps);
    const stopRollupFold = startRollupFold(deps);
    const stopVerifySchedule = startVerifySchedule(deps);
    await new Promise<void>((done) => {
      const stop = () => {
        deps.log.info("stopping");
        void Promise.all([server.stop(), stopDirectorySync(), stopCheckpoints(), stopSinks(), stopRetention(), stopRefusals(), stopAdoption(), stopRollupFold(), stopVerifySchedule(), replica.stop()])
          .then(async () => Promise.all([store.close(), deps.tracing?.shutdown().catch(() => undefined)]))
          .finally(done);
      };
      process.once("SIGTERM", stop);
      process.once("SIGINT", stop);
    });
  },
});

const migrateCmd = command({
  meta: { name: "migrate", description: "Apply pending database migrations and exit" },
  args: { "data-dir": dataDirArg },
  examples: ["svc controlplane migrate --data-dir /var/lib/svc"],
  async run({ args }) {
    const settings = serveSettings({ dataDir: args["data-dir"] });
    ensureDataDir(settings.dataDir);
    const store = openStore(settings.database, { maxConnections: 1 });
    try {
      const applied = await store.migrate();
      process.stdout.write(`${applied} migration(s) applied to ${store.location}\n`);
    } catch (e) {
      throw migrationFailure("migrate", store.location, e);
    } finally {
      await store.close();
    }
  },
});

const bootstrapAdmin = command({
  meta: { name: "bootstrap-admin", description: "Create an organization and its first owner" },
  args: {
    email: { type: "string", required: true, description: "the owner's email", valueHint: "email" },
    "org-name": { type: "string", description: "organization name", default: "Default organization" },
    "password-stdin": { type: "boolean", description: "read the owner's password from stdin instead of generating one" },
    "token-out": { type: "string", description: "write an API token for `svc login --with-token` to this file (mode 0600)", valueHint: "file" },
    "data-dir": dataDirArg,
  },
  examples: [
    "svc controlplane bootstrap-admin --email owner@example.com",
    "printf '%s' \"$PASSWORD\" | svc controlplane bootstrap-admin --email owner@example.com --password-stdin --token-out ~/.svc-token",
  ],
  async run({ args }) {
    const { settings, deps, store } = await openDeps({ dataDir: args["data-dir"] });
    const passwordFile = join(settings.dataDir, "initial-owner-password");
    // Never overwrite an earlier owner's password or token file: refuse before creating anything.
    for (const [file, what] of [
      [args["password-stdin"] ? null : passwordFile, "an earlier owner's generated password"],
      [args["token-out"] ?? null, "a token"],
    ] as const) {
      if (file && existsSync(file)) {
        await store.close();
        throw new CommandFailure(`bootstrap-admin: ${file} already exists and may hold ${what}; sign in with it and delete it (or choose another --token-out), then run again`);
      }
    }
    const password = args["password-stdin"] ? (await Bun.stdin.text()).replace(/\r?\n$/, "") : generatePassword();
    try {
      const r = await bootstrapOwner(deps, { email: args.email, orgName: args["org-name"], password, withToken: !!args["token-out"] });
      // The audit's checkpoint-signing key, made now so it can be pinned before anything is signed.
      const key = await ensureSigningKey(deps, r.orgId);
      const lines = [`Created organization ${r.orgId} with workspace "default" and owner ${args.email}.`];
      if (!args["password-stdin"]) {
        const file = passwordFile;
        writeFileSync(file, `${password}\n`, { mode: 0o600, flag: "wx" });
        chmodSync(file, 0o600);
        lines.push(`The owner's password is in ${file} (mode 0600); delete the file after the first sign-in.`);
      }
      if (args["token-out"] && r.token) {
        writeFileSync(args["token-out"], `${r.token}\n`, { mode: 0o600, flag: "wx" });
        chmodSync(args["token-out"], 0o600);
        lines.push(`An API token for the CLI is in ${args["token-out"]} (mode 0600).`);
      }
      lines.push(
        "",
        "Audit checkpoint-signing key (pin it outside this machine; `svc audit verify` trusts only a pinned key):",
        `  ${key.publicKey}`,
        `  fingerprint ${keyFingerprint(key.publicKey)}`,
        `  svc audit signing-key pin ${key.publicKey}   (after svc login; or compare the fingerprint when verify asks)`,
        "",
        "Next steps:",
        `  1. Sign in to the console at ${settings.config.publicUrl}/ and create the chat agent.`,
        `  2. svc login --url ${settings.config.publicUrl}`,
        "  3. svc bot init --platform chatui --name <name> --agent <agent_id> --workspace default",
      );
      process.stdout.write(`${lines.join("\n")}\n`);
    } catch (e) {
      if (e instanceof SvcError) throw new CommandFailure(`bootstrap-admin: ${e.message} (${e.code})`);
      throw e;
    } finally {
      await store.close();
    }
  },
});

export const controlplaneCommand = command({
  meta: { name: "controlplane", description: "The self-hosted control plane" },
  examples: ["svc controlplane serve", "svc controlplane bootstrap-admin --email owner@example.com", "SVC_CP_DATABASE=postgres://svc@db/svc svc controlplane migrate"],
  subCommands: { serve, migrate: migrateCmd, "bootstrap-admin": bootstrapAdmin },
});

export { dataDirFrom };
