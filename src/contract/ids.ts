// Prefixed, time-ordered ids (`org_01J…`): the prefix says what an id is in logs and tickets;
// the 48-bit millisecond timestamp first makes ids sort by creation, which cursor
// pagination relies on. The tail is 80 random bits, Crockford base32 like ULID; ids made in
// the same millisecond by one process increment the previous tail (ULID's monotonic mode), so
// they still sort in creation order.

export const ID_PREFIXES = {
  organization: "org",
  workspace: "ws",
  agent: "agt",
  installation: "inst",
  modelProfile: "mp",
  toolServer: "ts",
  policy: "pol",
  user: "usr",
  group: "grp",
  auditKey: "key",
  auditRecord: "rec",
  account: "acc",
  apiToken: "tok",
  remoteIdentity: "rid",
  claim: "clm",
  invite: "inv",
  loginRequest: "lrq",
  digestKey: "dk",
  assertionKey: "ak",
  replica: "rep",
  syncRun: "dsr",
  budget: "bud",
  budgetLease: "bls",
  auditChain: "chn",
  auditCheckpoint: "ckp",
  auditChainFlag: "flg",
  auditVerification: "ver",
  retentionRun: "ret",
  recoveryRequest: "rrq",
  membershipGrant: "mgr",
  notice: "ntc",
  siemSink: "snk",
  controlplaneReplica: "cpr",
  toolServerConsent: "ocs",
  toolServerGrant: "ogr",
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

let lastMs = -1;
let lastTail = new Uint8Array(16);

function nextTail(ms: number): string {
  if (ms === lastMs && increment(lastTail)) return encodeDigits(lastTail);
  lastMs = ms;
  lastTail = crypto.getRandomValues(new Uint8Array(16)).map((b) => b % 32);
  return encodeDigits(lastTail);
}

/** Adds one to base-32 digits in place; false when they were all at the maximum. */
function increment(digits: Uint8Array): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i]! < 31) {
      digits[i] = digits[i]! + 1;
      return true;
    }
    digits[i] = 0;
  }
  return false;
}

function encodeDigits(digits: Uint8Array): string {
  let out = "";
  for (const d of digits) out += ALPHABET[d];
  return out;
}

export function newId(kind: IdKind, now = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${encodeTime(now)}${nextTail(now)}`;
}

/**
 * The smallest id of this kind made at `ms` or later: ids compare as text in creation order, so
 * `id >= idFloor(kind, t)` holds for every id made from t on, and `id < idFloor(kind, t)` for every
 * one made before. Pure.
 */
export function idFloor(kind: IdKind, ms: number): string {
  return `${ID_PREFIXES[kind]}_${encodeTime(Math.max(0, Math.floor(ms)))}`;
}

/** The millisecond an id was made at (its first 10 characters after the prefix), or null when they are not a time. Pure. */
export function idTime(id: string): number | null {
  const t = id.slice(id.indexOf("_") + 1).slice(0, 10);
  if (t.length !== 10) return null;
  let ms = 0;
  for (const ch of t) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return null;
    ms = ms * 32 + v;
  }
  return ms;
}

export function hasPrefix(id: string, kind: IdKind): boolean {
  return id.startsWith(`${ID_PREFIXES[kind]}_`);
}
