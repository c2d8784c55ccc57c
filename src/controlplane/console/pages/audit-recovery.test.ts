// The escrow recovery section of the Audit keys page through the real app: the second owner
// requests with the form, sees no Approve button on their own request; the first owner, whom
// the requester never granted anything, sees the request in the notices on sign-in, is offered
// a fresh sign-in once theirs is over 5 minutes old (and refused with the code until then),
// approves with the button; the requester fetches the plaintext once, and a second fetch is
// refused on the page. Notices stay until each person dismisses them.
import { expect, test } from "bun:test";
import { PASSWORD, accountWithRole } from "../../auth/test-fixtures.ts";
import { ARGS, world } from "../../escrow/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";

async function signedIn(cp: Awaited<ReturnType<typeof world>>["cp"], email: string) {
  const b = browser(cp);
  await b.get("/sign-in");
  expect((await b.post("/sign-in", { email, password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! })).status).toBe(303);
  return b;
}

test("request, approve with a fresh sign-in and fetch once from the Audit keys page; notices until dismissed", async () => {
  const { cp, clock, escrowed, second } = await world();
  const third = await accountWithRole(cp, "admin", "third.admin@example.com", cp.accountId);
  const requester = await signedIn(cp, second.email);
  const requested = await requester.post("/audit-recovery", { record_id: escrowed.id, reason: "incident 4711", _csrf: await requester.csrf() });
  expect(requested.status).toBe(303);
  const id = (await cp.call("GET", cp.org("/audit-recovery-requests"))).json.requests[0].id as string;
  const ownPage = await (await requester.get("/audit-keys")).text();
  expect(ownPage).toContain(`data-recovery="${id}"`);
  expect(ownPage).toContain("incident 4711");
  expect(ownPage).not.toContain(`action="/audit-recovery/${id}/approve"`);
  expect(ownPage).toContain("waiting for another person to approve");
  expect(ownPage).toContain("a member for at least 24 hours when the request was made");
  expect(ownPage).not.toContain("data-notice="); // no notice of one's own step
  // A forged self-approval is refused by the API, and the page says why, with the code.
  const self = await requester.post(`/audit-recovery/${id}/approve`, { _csrf: await requester.csrf() });
  expect(self.status).toBe(403);
  const selfText = await self.text();
  expect(selfText).toContain("so you cannot approve it; another person must");
  expect(selfText).toContain("(recovery_self_approval)");

  // The first owner signs in: the request is announced on the page a sign-in lands on.
  const owner = await signedIn(cp, "owner@example.com");
  const home = await (await owner.get("/")).text();
  expect(home).toContain("Escrow recovery requested");
  expect(home).toContain(`${second.email} requested escrow recovery ${id}`);
  // Without the CSRF token nothing happens.
  expect((await owner.post(`/audit-recovery/${id}/approve`, {})).status).toBe(403);
  // Six minutes later the session is too old to approve: offered a fresh sign-in, refused with the code.
  clock.advance(6 * 60_000);
  const stalePage = await (await owner.get("/audit-keys")).text();
  expect(stalePage).toContain(`action="/audit-recovery/${id}/approve"`);
  expect(stalePage).toContain("data-fresh-sign-in");
  const stale = await owner.post(`/audit-recovery/${id}/approve`, { _csrf: await owner.csrf() });
  expect(stale.status).toBe(403);
  const staleText = await stale.text();
  expect(staleText).toContain("sign out, sign in again, then approve within 5 minutes (recovery_stale_sign_in)");
  const again = /href="(\/sign-in\?[^"]+)"/.exec(staleText)![1]!.replace(/&amp;/g, "&");
  expect((await owner.get(again)).status).toBe(200);
  const fresh = await owner.post("/sign-in", { email: "owner@example.com", password: PASSWORD, organization_id: cp.orgId, next: "/audit-keys#recovery", _csrf: owner.jar.get(PRESESSION_COOKIE)! });
  expect(fresh.headers.get("location")).toBe("/audit-keys#recovery");
  expect(await (await owner.get("/audit-keys")).text()).not.toContain("data-fresh-sign-in");
  expect((await owner.post(`/audit-recovery/${id}/approve`, { _csrf: await owner.csrf() })).status).toBe(303);
  expect(await (await owner.get("/audit-keys")).text()).toContain("only its requester can fetch");

  const ready = await (await requester.get("/audit-keys")).text();
  expect(ready).toContain(`action="/audit-recovery/${id}/fetch"`);
  expect(ready).toContain("Escrow recovery approved");
  expect(ready).toContain("Escrow recovery approval refused"); // the owner's stale attempt, announced
  const fetched = await requester.post(`/audit-recovery/${id}/fetch`, { _csrf: await requester.csrf() });
  expect(fetched.status).toBe(200);
  expect(await fetched.text()).toContain(ARGS.replace(/"/g, "&quot;"));
  const twice = await requester.post(`/audit-recovery/${id}/fetch`, { _csrf: await requester.csrf() });
  expect(twice.status).toBe(410);
  expect(await twice.text()).toContain("handed out once");
  expect(await (await requester.get("/audit-keys")).text()).not.toContain(`data-recovery="${id}"`);

  // The owner dismisses the fetch notice for themselves; the third admin still sees it.
  const ownerKeys = await (await owner.get("/audit-keys")).text();
  const notice = /data-notice="(ntc_[0-9A-Z]+)">\s*<p><strong>Escrow recovery: plaintext fetched/.exec(ownerKeys)![1]!;
  const dismissed = await owner.post(`/notices/${notice}/dismiss`, { next: "/audit-keys#recovery", _csrf: await owner.csrf() });
  expect(dismissed.headers.get("location")).toBe("/audit-keys#recovery");
  expect(await (await owner.get("/audit-keys")).text()).not.toContain(`data-notice="${notice}"`);
  expect((await cp.call("GET", cp.org("/notices"), { token: third.token })).json.notices.map((n: { id: string }) => n.id)).toContain(notice);
});
