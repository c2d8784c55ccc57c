// The Audit keys page through the real app (in-process): a key the service refuses is not
// registered, and the page says why in the admin's words.
import { expect, test } from "bun:test";
import { bech32 } from "@scure/base";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { disableUnusableKeys } from "../../audit-keys/service.ts";
import { tables } from "../../db/index.ts";
import { testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";

test("a low-order X25519 key is refused on the page, which says why and keeps the form filled", async () => {
  const cp = await testControlPlane();
  const b = browser(cp);
  await b.get("/sign-in");
  const signedIn = await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
  expect(signedIn.status).toBe(303);
  const lowOrder = bech32.encode("age", bech32.toWords(Buffer.from("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", "hex")));
  const res = await b.post("/audit-keys", { name: "broken key", public_key: lowOrder, _csrf: await b.csrf() });
  expect(res.status).toBe(422);
  const page = await res.text();
  expect(page).toContain("low-order X25519 point");
  expect(page).toContain("generate a new key pair");
  expect(page).toContain(lowOrder); // the form keeps what was pasted
  expect((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys).toHaveLength(0);
});

test("a key the service disabled shows why on the page", async () => {
  const cp = await testControlPlane();
  const lowOrder = bech32.encode("age", bech32.toWords(new Uint8Array(32)));
  await cp.deps.db.insert(tables(cp.deps.db).auditKeys).values({ id: "key_OLDZERO", orgId: cp.orgId, name: "old zero key", publicKey: lowOrder, status: "active", createdAt: Date.now() });
  await disableUnusableKeys(cp.deps);
  const b = browser(cp);
  await b.get("/sign-in");
  await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
  const page = await (await b.get("/audit-keys")).text();
  expect(page).toContain("old zero key");
  expect(page).toMatch(/data-disabled-reason>disabled by the service: public key &quot;age1qqqqqqqq…&quot; is a low-order X25519 point/);
});
