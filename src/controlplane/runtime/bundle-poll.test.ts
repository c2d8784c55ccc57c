import { describe, expect, test } from "bun:test";
import { newSecret } from "../auth/tokens.ts";
import { createApp } from "../app.ts";
import { testControlPlane } from "../testing.ts";
import { bundlePollShortcut, pollQuery, sharedRevisionReads } from "./bundle-poll.ts";
import { bumpRevision } from "../organizations/service.ts";
import { addInstallation, addOrganization } from "./fixtures.ts";

const BUNDLE = "/api/v1/runtime/policy-bundle";

async function etagOf(cp: Awaited<ReturnType<typeof testControlPlane>>, token: string, query = "?version=1"): Promise<string> {
  const res = await cp.call("GET", `${BUNDLE}${query}`, { token });
  expect(res.status).toBe(200);
  return res.headers.get("etag")!;
}

describe("unchanged bundle polls answered before the pipeline", () => {
  test("the query is taken only in the plain form the route accepts; anything else goes to the pipeline", () => {
    expect(pollQuery("")).toEqual({ version: 1, conditions: false });
    expect(pollQuery("version=1")).toEqual({ version: 1, conditions: false });
    expect(pollQuery("version=2&conditions=1")).toEqual({ version: 2, conditions: true });
    expect(pollQuery("conditions=0&version=2")).toEqual({ version: 2, conditions: false });
    for (const q of ["version=3", "version=1&version=1", "version=%31", "version=1&x=1", "conditions=11", "version=+1", "version", "version=1&"]) expect(pollQuery(q)).toBeNull();
  });

  test("a 304 carries the ETag and no-store, and is counted under the route", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token);
    for (let i = 0; i < 3; i++) {
      const res = await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": etag } });
      expect(res.status).toBe(304);
      expect(res.text).toBe("");
      expect(res.headers.get("etag")).toBe(etag);
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    const metrics = await cp.deps.metrics!.registry.render();
    expect(metrics).toContain(`svc_cp_http_requests_total{method="GET",route="${BUNDLE}",status="304"} 3`);
  });

  test("the shortcut's remembered query and ETags never answer for another poll: queries alternating, two organizations at different revisions", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const other = await addOrganization(cp);
    const b = await addInstallation(cp, { orgId: other.orgId, workspaceId: other.workspaceId });
    for (let i = 0; i < 3; i++) await bumpRevision(cp.deps.db, other.orgId); // b's organization at another revision
    const poll = async (token: string, query: string, etag: string) => (await cp.call("GET", `${BUNDLE}${query}`, { token, headers: { "if-none-match": etag } })).status;
    const [a1, a2, b1, b2] = [await etagOf(cp, a.token), await etagOf(cp, a.token, "?version=2&conditions=1"), await etagOf(cp, b.token), await etagOf(cp, b.token, "?version=2&conditions=1")];
    expect(new Set([a1, a2, b1, b2]).size).toBe(4);
    for (let round = 0; round < 2; round++) {
      expect([
        await poll(a.token, "?version=1", a1),
        await poll(b.token, "?version=1", b1),
        await poll(a.token, "?version=2&conditions=1", a2),
        await poll(b.token, "?version=2&conditions=1", b2),
      ]).toEqual([304, 304, 304, 304]);
      // Each ETag answers only its own organization's revision and its own query.
      expect([await poll(a.token, "?version=1", b1), await poll(b.token, "?version=1", a1), await poll(a.token, "?version=2&conditions=1", a1), await poll(a.token, "?version=1", a2)]).toEqual([
        200, 200, 200, 200,
      ]);
    }
    // The same query twice in a row (the remembered one is used the second time), then the other.
    const runs = [];
    for (const [query, etag] of [
      ["?version=2&conditions=1", a2],
      ["?version=2&conditions=1", a2],
      ["?version=1", a1],
      ["?version=1", a1],
      ["?version=1", a2],
    ] as const)
      runs.push(await poll(a.token, query, etag));
    expect(runs).toEqual([304, 304, 304, 304, 200]);
  });

  test("an ETag names the body: another replica answers it 304 only when its compilation gives the same body (issue 29)", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token, "?version=2&conditions=1");
    expect(etag).toMatch(/^W\/"\d+-v2c-[0-9a-f]{16}"$/);
    // A second replica on the same store, which never served this bundle: it compiles, finds the same body, 304.
    const replica = createApp(cp.deps);
    const poll = async (app: { handle(r: Request): Promise<Response> }, ifNoneMatch: string) =>
      app.handle(new Request(`http://localhost${BUNDLE}?version=2&conditions=1`, { headers: { authorization: `Bearer ${inst.token}`, "if-none-match": ifNoneMatch } }));
    expect((await poll(replica, etag)).status).toBe(304);
    // A replica of another release compiled the same revision into another body (an old one drops
    // a condition): its ETag has the revision but not the digest, and is never answered 304.
    const revision = etag.slice(3).split("-")[0];
    for (const other of [`W/"${revision}-v2c"`, `W/"${revision}-v2c-0000000000000000"`]) {
      const res = await poll(replica, other);
      expect(res.status).toBe(200);
      expect(res.headers.get("etag")).toBe(etag);
      expect(((await res.json()) as { features?: string[] }).features).toEqual(["conditions"]);
    }
  });

  test("a rotated token is refused at once, even with the current ETag, after polls that were answered 304", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token);
    expect((await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(304);

    const rotated = await cp.call("POST", cp.org(`/installations/${inst.installationId}/credential`), { body: { rotate: true } });
    expect(rotated.status).toBe(200);
    const fresh = rotated.json.token as string;
    const current = await etagOf(cp, fresh);
    const old = await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": current } });
    expect(old.status).toBe(401);
    expect(old.json.code).toBe("unauthorized");
    expect((await cp.call("GET", `${BUNDLE}?version=1`, { token: fresh, headers: { "if-none-match": current } })).status).toBe(304);
  });

  test("a deleted installation's token is refused at once; a wrong token gets the pipeline's 401", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const other = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token);
    expect((await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(304);
    expect((await cp.call("DELETE", cp.org(`/installations/${inst.installationId}`))).status).toBe(204);
    const current = await etagOf(cp, other.token);
    const gone = await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": current } });
    expect(gone.status).toBe(401);
    const wrong = await cp.call("GET", `${BUNDLE}?version=1`, { token: newSecret("runtime"), headers: { "if-none-match": current } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("content-type")).toContain("application/problem+json");
  });

  test("a poll the shortcut does not take is answered by the route as before", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token);
    const bad = await cp.call("GET", `${BUNDLE}?version=3`, { token: inst.token, headers: { "if-none-match": etag } });
    expect(bad.status).toBe(422);
    expect((await cp.call("GET", `${BUNDLE}?version=%31`, { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(304);
    expect((await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": 'W/"0-v1"' } })).status).toBe(200);
  });

  test("a store failure makes the shortcut step aside: the pipeline answers, never a 304", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const etag = await etagOf(cp, inst.token);
    const poll = () => new Request(`http://localhost${BUNDLE}?version=1`, { headers: { authorization: `Bearer ${inst.token}`, "if-none-match": etag } });
    const shortcut = bundlePollShortcut(cp.deps);
    // Known to this shortcut first (the token query ran), so the failure below hits the revision read.
    expect((await shortcut(poll()))?.status).toBe(304);
    const unknown = bundlePollShortcut(cp.deps);

    await cp.store.close();
    expect(await shortcut(poll())).toBeNull();
    expect(await unknown(poll())).toBeNull();
    // The pipeline took the poll: its authentication ran the token query on the failed store
    // (the shortcut never throws), and the gate answers that as the logged internal error
    // (not a 304, and no exception left to Bun.serve's stack-trace page).
    const errors: { event: string; path?: unknown }[] = [];
    cp.deps.log = { info() {}, warn() {}, error: (event, fields) => void errors.push({ event, path: fields?.path }) };
    const res = await cp.call("GET", `${BUNDLE}?version=1`, { token: inst.token, headers: { "if-none-match": etag } });
    expect(errors).toEqual([{ event: "request failed", path: BUNDLE }]);
    expect(res.status).toBe(500);
    expect(res.json).toMatchObject({ code: "internal", detail: "an internal error occurred; see the control plane log" });
    expect(JSON.stringify(res.json)).not.toContain("installations");
  });

  test("polls of one turn share a revision read; a poll that arrives after the read began gets a read of its own", async () => {
    let revision = 1;
    let reads = 0;
    let release = () => {};
    let held = Promise.resolve();
    // A read sees the revision committed when it starts, and may take a while to answer.
    const shared = sharedRevisionReads(async () => {
      reads++;
      const seen = revision;
      await held;
      return seen;
    });
    expect(await Promise.all([shared("org_a"), shared("org_a"), shared("org_b")])).toEqual([1, 1, 1]);
    expect(reads).toBe(2);

    held = new Promise<void>((done) => (release = done));
    const before = shared("org_a");
    await new Promise((started) => setImmediate(started));
    expect(reads).toBe(3);
    revision = 2; // committed while that read is in flight, before the next poll is sent
    const after = shared("org_a");
    release();
    expect(await before).toBe(1);
    expect(await after).toBe(2);
    expect(reads).toBe(4);
  });
});
