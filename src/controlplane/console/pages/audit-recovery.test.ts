// The escrow recovery section of the Audit keys page through the real app: the owner requests
// with the form, sees no Approve button on their own request; a second admin approves with the
// button; the owner fetches the plaintext once, and a second fetch is refused on the page.
import { expect, test } from "bun:test";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { ARGS, world } from "../../escrow/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";

async function signedIn(cp: Awaited<ReturnType<typeof world>>["cp"], email: string) {
  const b = browser(cp);
  await b.get("/sign-in");
  expect((await b.post("/sign-in", { email, password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! })).status).toBe(303);
  return b;
}

test("request, approve and fetch once from the Audit keys page", async () => {
  const { cp, escrowed, second } = await world();
  const owner = await signedIn(cp, "owner@example.com");
  const requested = await owner.post("/audit-recovery", { record_id: escrowed.id, reason: "incident 4711", _csrf: await owner.csrf() });
  expect(requested.status).toBe(303);
  const id = (await cp.call("GET", cp.org("/audit-recovery-requests"))).json.requests[0].id as string;
  const ownPage = await (await owner.get("/audit-keys")).text();
  expect(ownPage).toContain(`data-recovery="${id}"`);
  expect(ownPage).toContain("incident 4711");
  expect(ownPage).not.toContain(`action="/audit-recovery/${id}/approve"`);
  expect(ownPage).toContain("waiting for a second owner or admin");
  // A forged self-approval is refused by the API, and the page says why.
  const self = await owner.post(`/audit-recovery/${id}/approve`, { _csrf: await owner.csrf() });
  expect(self.status).toBe(403);
  expect(await self.text()).toContain("cannot approve it");
  // Without the CSRF token nothing happens.
  const admin = await signedIn(cp, second.email);
  expect((await admin.post(`/audit-recovery/${id}/approve`, {})).status).toBe(403);
  const adminPage = await (await admin.get("/audit-keys")).text();
  expect(adminPage).toContain(`action="/audit-recovery/${id}/approve"`);
  expect(adminPage).toContain("Only an owner can request");
  expect((await admin.post(`/audit-recovery/${id}/approve`, { _csrf: await admin.csrf() })).status).toBe(303);
  expect((await admin.get("/audit-keys").then(async (r) => r.text()))).toContain("only its requester can fetch");

  const ready = await (await owner.get("/audit-keys")).text();
  expect(ready).toContain(`action="/audit-recovery/${id}/fetch"`);
  const fetched = await owner.post(`/audit-recovery/${id}/fetch`, { _csrf: await owner.csrf() });
  expect(fetched.status).toBe(200);
  expect(await fetched.text()).toContain(ARGS.replace(/"/g, "&quot;"));
  const again = await owner.post(`/audit-recovery/${id}/fetch`, { _csrf: await owner.csrf() });
  expect(again.status).toBe(410);
  expect(await again.text()).toContain("handed out once");
  expect(await (await owner.get("/audit-keys")).text()).not.toContain(`data-recovery="${id}"`);
});
