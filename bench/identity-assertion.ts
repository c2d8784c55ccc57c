// The time an identity assertion adds to an MCP call (issue 32): `bun bench/identity-assertion.ts [--calls N]`.
// In one process, interleaved, after a warm-up: what the runtime does per upstream request of a
// server that asks for assertions (presentIdentity in a call's scope: claims, a fresh jti, the
// ES256 signature with the non-extractable key, the header), the signature alone, and beside
// them the choices not taken: EdDSA through jose, and ES256 through node:crypto with no JWT
// around it (the floor). Prints p50/p99 against the target (0.2 ms at p50) with the machine and
// its load, and writes bench/results/identity-assertion-<timestamp>.json. The machine is
// shared: compare rows of one run.
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { generateKeyPairSync, sign } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { assertionClaims } from "../src/contract/identity-assertion.ts";
import { silentLogger } from "../src/log/index.ts";
import { credentialSync } from "../src/proxy/link/credential-sync.ts";
import { AssertionKeys } from "../src/proxy/mcp/assertion.ts";
import { callScope, presentIdentity } from "../src/proxy/mcp/upstream-identity.ts";

const argv = process.argv.slice(2);
const CALLS = Number(argv[argv.indexOf("--calls") + 1] ?? 0) || 5000;
const TARGET_P50_MS = 0.2;
const subject = { sub: "usr_01JTESTALICE0000000000000", email: "alice@example.com", groups: ["sales", "support"], tool: "lookup", audit_record_id: "rec_01JTEST000000000000000000A" };

// The runtime's key as it holds it: sealed by the control plane's code path, opened, imported non-extractable.
const { privateKey } = await generateKeyPair("ES256", { extractable: true });
const identity = await generateX25519Identity();
const e = new Encrypter();
e.addRecipient(await identityToRecipient(identity));
const sealed = Buffer.from(await e.encrypt(JSON.stringify({ ...(await exportJWK(privateKey)), kid: "ak_bench", alg: "ES256" }))).toString("base64");
const sync = await credentialSync(identity);
const keys = new AssertionKeys({
  fetch: async () => ({ id: "ak_bench", alg: "ES256", issuer: "https://cp.example.com", sealed_private_jwk: sealed }),
  open: async (s) => sync.openBytes(s),
  installationId: () => "inst_bench",
  log: silentLogger,
});
await keys.follow("ak_bench");
const source = { header: "X-Svc-Identity", mint: async (s: typeof subject | null) => keys.mint("X-Svc-Identity", "https://kb.example.com/mcp", s) };
const ed = (await generateKeyPair("EdDSA")).privateKey;
const raw = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
const claims = () =>
  assertionClaims({
    issuer: "https://cp.example.com",
    audience: "https://kb.example.com/mcp",
    installationId: "inst_bench",
    subject,
    jti: crypto.randomUUID(),
    nowSeconds: Math.floor(Date.now() / 1000),
  });

const paths: Record<string, () => Promise<unknown>> = {
  "per request, as the runtime does it (presentIdentity in a call's scope)": async () => callScope.run({ identity: subject }, async () => presentIdentity(new Headers(), source)),
  "mint alone (claims, jti, ES256 via jose)": async () => keys.mint("X-Svc-Identity", "https://kb.example.com/mcp", subject),
  "not taken: EdDSA via jose": async () => new SignJWT(claims()).setProtectedHeader({ alg: "EdDSA", kid: "k", typ: "JWT" }).sign(ed),
  "floor: ES256 signature alone via node:crypto (no JWT)": async () => sign("sha256", Buffer.from(JSON.stringify(claims())), { key: raw, dsaEncoding: "ieee-p1363" }),
};
const names = Object.keys(paths);
const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
for (let i = 0; i < 500; i++) for (const n of names) await paths[n]!();
for (let i = 0; i < CALLS; i++) {
  for (const n of names) {
    const t = performance.now();
    await paths[n]!();
    times[n]!.push(performance.now() - t);
  }
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const rows = names.map((n) => ({ path: n, p50_ms: pct(times[n]!, 0.5), p99_ms: pct(times[n]!, 0.99) }));
const machine = { cpu: cpus()[0]?.model ?? "?", cores: cpus().length, memory_gib: Math.round(totalmem() / 2 ** 30), loadavg_1m: loadavg()[0], bun: Bun.version };
const f = (x: number) => `${x.toFixed(3)} ms`;
console.log(`Identity assertion per upstream request, ${CALLS} each, interleaved; ${machine.cpu} × ${machine.cores}, load ${machine.loadavg_1m!.toFixed(2)}, Bun ${machine.bun}`);
console.log("| path | p50 | p99 |\n|---|---|---|");
for (const r of rows) console.log(`| ${r.path} | ${f(r.p50_ms)} | ${f(r.p99_ms)} |`);
const added = rows[0]!.p50_ms;
console.log(`target: ≤ ${TARGET_P50_MS} ms at p50 → ${added <= TARGET_P50_MS ? "met" : "MISSED"} (${f(added)})`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `identity-assertion-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify({ calls: CALLS, target_p50_ms: TARGET_P50_MS, machine, rows }, null, 2));
console.log(`written ${out}`);
