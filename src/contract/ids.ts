// Prefixed, time-ordered ids (`org_01J…`): the prefix says what an id is in logs and tickets;
// the 48-bit millisecond timestamp first makes ids sort by creation, which cursor
// pagination relies on. The tail is 80 random bits, Crockford base32 like ULID.

export const ID_PREFIXES = {
  organization: "org",
  workspace: "ws",
  agent: "agt",
  installation: "inst",
  modelProfile: "mp",
  policy: "pol",
  user: "usr",
  group: "grp",
  auditKey: "key",
  auditRecord: "rec",
  account: "acc",
  apiToken: "tok",
  remoteIdentity: "rid",
  claim: "clm",
  loginRequest: "lrq",
  digestKey: "dk",
  replica: "rep",
  syncRun: "dsr",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function encodeRandom(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 32];
  return out;
}

export function newId(kind: IdKind, now = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${encodeTime(now)}${encodeRandom()}`;
}

export function hasPrefix(id: string, kind: IdKind): boolean {
  return id.startsWith(`${ID_PREFIXES[kind]}_`);
}
