// What every admin command group shares, against a real control plane: `--limit` pages through
// the API however large it is, as gh's does (`--limit 0` or `--all` for everything), and under
// `--json` a failure is one JSON object on stderr carrying the same code the API gives.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHomes } from "./cli-support.ts";

let cp: ControlPlaneProcess;
const { home, removeHomes } = tempHomes();
const RECORDS = 1_234;

beforeAll(async () => {
  cp = await startControlPlane();
  const rt = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  const records = Array.from({ length: RECORDS }, () => runtimeRecord(rt));
  const r = await api(cp, "POST", "/runtime/audit-records", { records }, rt.token);
  if (r.status !== 200 || r.json.rejected.length > 0) throw new Error(`storing records failed: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  removeHomes();
});

type Page = { records: Array<{ id: string }>; next_cursor: string | null };
async function listJson(...args: string[]): Promise<Page> {
  // the runtime's records: the admin trail's events (the bootstrap, the agent, …) are listed too otherwise
  const r = await svc(cp, ["audit", "list", "--kind", "runtime", "--json", ...args], { home: home() });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as Page;
}

test("--limit beyond the API's page of 500 pages for you; --all and --limit 0 give every record; the pages are the list's, in order", async () => {
  const all = await listJson("--all");
  expect(all.records).toHaveLength(RECORDS);
  expect(all.next_cursor).toBeNull();
  expect(new Set(all.records.map((r) => r.id)).size).toBe(RECORDS);
  expect((await listJson("--limit", "0")).records.map((r) => r.id)).toEqual(all.records.map((r) => r.id));

  const thousand = await listJson("--limit", "1000");
  expect(thousand.records.map((r) => r.id)).toEqual(all.records.slice(0, 1000).map((r) => r.id));
  expect(thousand.next_cursor).toBeString();
  // the cursor it ends with goes on exactly where it stopped
  const rest = await listJson("--all", "--cursor", thousand.next_cursor!);
  expect(rest.records.map((r) => r.id)).toEqual(all.records.slice(1000).map((r) => r.id));

  const table = await svc(cp, ["audit", "list", "--kind", "runtime", "--limit", "700"], { home: home() });
  expect(table.code).toBe(0);
  expect(table.stdout.trim().split("\n")).toHaveLength(701);
  expect(table.stderr).toContain("with a larger --limit (--all for every one)");
});

test("a bad --limit, or --limit with --all, is a usage error naming it", async () => {
  for (const [args, text] of [
    [["--limit=-1"], '--limit must be a whole number (0 for all), not "-1"'],
    [["--limit", "ten"], '--limit must be a whole number (0 for all), not "ten"'],
    [["--limit", "1000", "--all"], "--all and --limit 1000 contradict each other"],
  ] as const) {
    const r = await svc(cp, ["audit", "list", ...args], { home: home() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(text);
  }
});

test("under --json a refusal is one JSON object on stderr with the API's own code and status; stdout stays empty", async () => {
  const cases: Array<{ args: string[]; apiPath: string }> = [
    { args: ["policies", "delete", "pol_01JNOSUCHPOLICY000000000000", "--json"], apiPath: "/policies/pol_01JNOSUCHPOLICY000000000000" },
    { args: ["policies", "list", "--workspace", "no-such-workspace", "--json"], apiPath: "/policies?workspace=no-such-workspace" },
    { args: ["audit", "show", "rec_01JNOSUCHRECORD0000000000000", "--json"], apiPath: "/audit-records/rec_01JNOSUCHRECORD0000000000000" },
  ];
  for (const c of cases) {
    const r = await svc(cp, c.args, { home: home() });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const body = JSON.parse(r.stderr);
    const direct = await api(cp, c.args[1] === "delete" ? "DELETE" : "GET", org(cp, c.apiPath));
    expect(body.error).toMatchObject({ code: direct.json.code, status: direct.status, exit_code: 1 });
    expect(body.error.message).toStartWith(`svc ${c.args[0]} ${c.args[1]}: `);
    expect(body.error.message).toEndWith(`(${direct.json.code})`);
  }
  // without --json: the same sentence, as text
  const plain = await svc(cp, ["policies", "delete", "pol_01JNOSUCHPOLICY000000000000"], { home: home() });
  expect(plain.stderr).toStartWith("svc policies delete: ");
  expect(() => JSON.parse(plain.stderr)).toThrow();
});

test("under --json a usage error is JSON too (exit 2, with the usage line); a CLI-side failure keeps its code", async () => {
  const usage = await svc(cp, ["audit", "list", "--decision", "maybe", "--json"], { home: home() });
  expect(usage.code).toBe(2);
  const u = JSON.parse(usage.stderr).error;
  expect(u).toMatchObject({ code: "usage", exit_code: 2 });
  expect(u.message).toContain('--decision must be one of permit, deny, ask, not "maybe"');
  expect(u.usage).toStartWith("svc audit list ");

  const pattern = await svc(cp, ["policies", "create", "--name", "x", "--src-pattern", "nobody", "--dst-pattern", "tool:a", "--effect", "permit", "--workspace", "default", "--json"], {
    home: home(),
  });
  expect(pattern.code).toBe(2);
  expect(JSON.parse(pattern.stderr).error.code).toBe("invalid_pattern");

  const unreachable = await svc(cp, ["policies", "list", "--workspace", "default", "--json"], { home: home(), env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:9" } });
  expect(unreachable.code).toBe(1);
  expect(JSON.parse(unreachable.stderr).error.code).toBe("unreachable");
});
