// The one place `svc controlplane …` reads its environment. Flags win over variables.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CommandFailure } from "../command/index.ts";
import { type ControlPlaneConfig, defaultConfig } from "./deps.ts";
import { EmbeddedKms } from "./kms/index.ts";

export type ServeSettings = {
  dataDir: string;
  /** SVC_CP_DATABASE: a SQLite file (default `<data dir>/controlplane.db`) or a postgres:// URL. */
  database: string;
  /** SVC_CP_DATABASE_POOL: connections per replica to PostgreSQL. */
  databasePool: number;
  host: string;
  port: number;
  config: ControlPlaneConfig;
  tls: { cert: string; key: string } | null;
};

export function dataDirFrom(flag: string | undefined, env = process.env): string {
  return resolve(flag ?? env.SVC_CP_DATA_DIR ?? join(env.HOME ?? ".", ".local/share/svc-controlplane"));
}

/**
 * Creates the data directory, or tightens an existing one, to 0700: it holds the master key and
 * the database. A directory others share is refused and never changed: a world-writable one with
 * the sticky bit (/tmp: tightening it broke every other program on the machine), or one another
 * user owns (their files, and they could swap ours).
 */
export function ensureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = statSync(dir);
  const elsewhere = `set SVC_CP_DATA_DIR or --data-dir to a directory of its own, e.g. ${join(dir, "svc-controlplane")}`;
  if (!st.isDirectory()) throw new CommandFailure(`the data directory ${dir} is not a directory; ${elsewhere}`, 2, "data_dir_refused");
  if (st.mode & 0o1000 && st.mode & 0o002)
    throw new CommandFailure(`the data directory ${dir} is shared (world-writable with the sticky bit, like /tmp) and is left as it is; ${elsewhere}`, 2, "data_dir_refused");
  const me = process.getuid?.();
  if (me !== undefined && st.uid !== me)
    throw new CommandFailure(`the data directory ${dir} belongs to user ${st.uid}, not to this user (${me}), and is left as it is; run as its owner, or ${elsewhere}`, 2, "data_dir_refused");
  chmodSync(dir, 0o700);
}

export function serveSettings(flags: { listen?: string; dataDir?: string; publicUrl?: string; tlsCert?: string; tlsKey?: string }, env = process.env): ServeSettings {
  const dataDir = dataDirFrom(flags.dataDir, env);
  const listen = flags.listen ?? env.SVC_CP_LISTEN ?? "127.0.0.1:8420";
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) throw new CommandFailure(`SVC_CP_LISTEN / --listen "${listen}" must be host:port, for example 127.0.0.1:8420`, 2);
  const host = m[1]!.replace(/^\[|\]$/g, "");
  const port = Number(m[2]);
  const tlsCert = flags.tlsCert ?? env.SVC_CP_TLS_CERT;
  const tlsKey = flags.tlsKey ?? env.SVC_CP_TLS_KEY;
  if (!!tlsCert !== !!tlsKey) throw new CommandFailure("set both SVC_CP_TLS_CERT and SVC_CP_TLS_KEY (or --tls-cert and --tls-key), or neither", 2);
  const scheme = tlsCert ? "https" : "http";
  const publicUrl = flags.publicUrl ?? env.SVC_CP_PUBLIC_URL ?? `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`;
  try {
    new URL(publicUrl);
  } catch {
    throw new CommandFailure(`SVC_CP_PUBLIC_URL "${publicUrl}" is not a URL`, 2);
  }
  return {
    dataDir,
    database: env.SVC_CP_DATABASE || join(dataDir, "controlplane.db"),
    databasePool: poolSize(env),
    host,
    port,
    config: {
      ...defaultConfig(publicUrl),
      ...extraCa(env),
      trustForwardedFor: flag(env, "SVC_CP_TRUST_FORWARDED_FOR"),
      allowPrivateOutbound: flag(env, "SVC_CP_ALLOW_PRIVATE_OUTBOUND"),
      allowLoopbackSinks: flag(env, "SVC_CP_ALLOW_LOOPBACK_SINKS"),
      ...(env.SVC_CP_METRICS_TOKEN?.trim() ? { metricsToken: env.SVC_CP_METRICS_TOKEN.trim() } : {}),
      ...checkpointInterval(env),
      ...verifyInterval(env),
    },
    tls: tlsCert && tlsKey ? { cert: tlsCert, key: tlsKey } : null,
  };
}

/** SVC_CP_AUDIT_CHECKPOINT_SECONDS: 10 s to 1 day (default 3600, in defaultConfig). */
function checkpointInterval(env: NodeJS.ProcessEnv): { auditCheckpointSeconds?: number } {
  const raw = env.SVC_CP_AUDIT_CHECKPOINT_SECONDS;
  if (raw === undefined || raw === "") return {};
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10 || n > 86_400) throw new CommandFailure(`SVC_CP_AUDIT_CHECKPOINT_SECONDS="${raw}" must be a whole number of seconds from 10 to 86400`, 2);
  return { auditCheckpointSeconds: n };
}

/** SVC_CP_AUDIT_VERIFY_HOURS: 0 (off) to 720 hours (default 24, in defaultConfig). */
function verifyInterval(env: NodeJS.ProcessEnv): { auditVerifyHours?: number } {
  const raw = env.SVC_CP_AUDIT_VERIFY_HOURS;
  if (raw === undefined || raw === "") return {};
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 720) throw new CommandFailure(`SVC_CP_AUDIT_VERIFY_HOURS="${raw}" must be a whole number of hours from 0 (never) to 720`, 2);
  return { auditVerifyHours: n };
}

function poolSize(env: NodeJS.ProcessEnv): number {
  const raw = env.SVC_CP_DATABASE_POOL;
  if (raw === undefined || raw === "") return 10;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new CommandFailure(`SVC_CP_DATABASE_POOL="${raw}" must be a whole number of connections from 1 to 1000`, 2);
  return n;
}

/** A yes/no variable: 1/true/yes turn it on; unset, empty, 0/false/no leave it off. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const v = (env[name] ?? "").trim().toLowerCase();
  if (v === "" || v === "0" || v === "false" || v === "no") return false;
  if (v === "1" || v === "true" || v === "yes") return true;
  throw new CommandFailure(`${name}="${env[name]}" must be 1 or 0`, 2);
}

/** SVC_CP_EXTRA_CA_FILE: a PEM file of a CA the directory sync trusts besides the system roots. */
function extraCa(env: NodeJS.ProcessEnv): { extraCaPem?: string } {
  const file = env.SVC_CP_EXTRA_CA_FILE;
  if (!file) return {};
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (e) {
    throw new CommandFailure(`SVC_CP_EXTRA_CA_FILE ${file} cannot be read: ${(e as Error).message}`, 2);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw new CommandFailure(`SVC_CP_EXTRA_CA_FILE ${file} holds no PEM certificate`, 2);
  return { extraCaPem: pem };
}

/**
 * The KMS master key's file when no SVC_CP_MASTER_KEY_FILE names one: a folder of its own under
 * the user's configuration (XDG), never the data directory beside the database, so that a copy
 * of the data directory or of the database (a backup, a volume snapshot, someone with write
 * access to the store) does not carry the key that unwraps its secrets and signs its audit.
 */
export function defaultMasterKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME?.trim() || join(env.HOME ?? ".", ".config");
  return join(config, "svc-controlplane", "master.key");
}

export type LoadedKms = { kms: EmbeddedKms; created: string | null; file: string | null; warnings: string[] };

/**
 * The KMS master key: SVC_CP_MASTER_KEY (base64 of 32 bytes), else the file named by
 * SVC_CP_MASTER_KEY_FILE, else `master.key` in the data directory when an installation made
 * before keeps it there (it keeps working, with a warning and the move to make), else
 * defaultMasterKeyFile(), created (mode 0600, its folder 0700) on first start. A key file in the
 * same folder as the SQLite database is warned about at every start.
 */
export function loadKms(dataDir: string, env: NodeJS.ProcessEnv = process.env, database: string = env.SVC_CP_DATABASE || join(dataDir, "controlplane.db")): LoadedKms {
  const parse = (b64: string, from: string) => {
    try {
      return EmbeddedKms.fromBase64(b64);
    } catch (e) {
      throw new CommandFailure(`${from} is not a base64 32-byte key (${(e as Error).message}); generate one with: openssl rand -base64 32`, 2);
    }
  };
  if (env.SVC_CP_MASTER_KEY) return { kms: parse(env.SVC_CP_MASTER_KEY, "SVC_CP_MASTER_KEY"), created: null, file: null, warnings: [] };
  const warnings: string[] = [];
  const legacy = join(dataDir, "master.key");
  let file = env.SVC_CP_MASTER_KEY_FILE ? resolve(env.SVC_CP_MASTER_KEY_FILE) : existsSync(legacy) ? legacy : defaultMasterKeyFile(env);
  const sqlite = !/^postgres(ql)?:\/\//.test(database) && database !== ":memory:";
  if (sqlite && dirname(resolve(file)) === dirname(resolve(database))) {
    const target = defaultMasterKeyFile(env);
    const move = env.SVC_CP_MASTER_KEY_FILE
      ? `move it elsewhere and set SVC_CP_MASTER_KEY_FILE to it`
      : `mkdir -p -m 700 ${dirname(target)} && mv ${file} ${target} (or set SVC_CP_MASTER_KEY_FILE to where you keep it)`;
    warnings.push(
      `the master key ${file} is in the same folder as the database ${database}: whoever copies that folder (a backup, a snapshot) has both; keep the key apart (docs/controlplane.md "Master key"): ${move}`,
    );
  }
  if (existsSync(file)) return { kms: parse(readFileSync(file, "utf8"), `master key file ${file}`), created: null, file, warnings };
  if (env.SVC_CP_MASTER_KEY_FILE) throw new CommandFailure(`SVC_CP_MASTER_KEY_FILE ${file} does not exist`, 2);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, `${EmbeddedKms.generateKey()}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
  } catch (e) {
    // Another process made it first (two control planes starting at once): use theirs.
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    file = resolve(file);
    return { kms: parse(readFileSync(file, "utf8"), `master key file ${file}`), created: null, file, warnings };
  }
  return { kms: parse(readFileSync(file, "utf8"), `master key file ${file}`), created: file, file, warnings };
}
