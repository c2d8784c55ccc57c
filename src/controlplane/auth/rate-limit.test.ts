// Abuse limits on unauthenticated auth routes: failed password sign-ins per email and per
// client IP, `svc login` request creation per IP, and the token poll interval. They live in
// the store: replicas on one database share them, and a restart keeps them.
import { describe, expect, test } from "bun:test";
import { createApp } from "../app.ts";
import { testControlPlane } from "../testing.ts";
import { PASSWORD } from "./test-fixtures.ts";

const small = { signInFailuresPerEmail: 3, signInFailuresPerIp: 5, signInWindowSeconds: 60, loginRequestsPerIp: 2, loginRequestWindowSeconds: 60 };

async function setup() {
  let clock = 1_750_000_000_000;
  const cp = await testControlPlane({ now: () => clock, config: { rateLimits: small, trustForwardedFor: true } });
  const signIn = async (email: string, password: string, ip = "203.0.113.7") =>
    cp.call("POST", "/api/v1/auth/sessions", { body: { email, password }, token: null, headers: { "x-forwarded-for": `198.51.100.1, ${ip}` } });
  return { cp, signIn, advance: (ms: number) => (clock += ms) };
}

/** Another control-plane replica (or the same one restarted): its own deps and app, the same database. */
function replicaOf(cp: Awaited<ReturnType<typeof testControlPlane>>) {
  const app = createApp({ ...cp.deps });
  return async (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await app.handle(new Request(`http://localhost${path}`, { method, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }));
    return { status: res.status, headers: res.headers, json: (await res.json()) as any };
  };
}

describe("password sign-in limits", () => {
  test("failures per email: 429 rate_limited with Retry-After, even for the right password, until the window ends", async () => {
    const { signIn, advance } = await setup();
    for (let i = 0; i < 3; i++) expect((await signIn("Owner@Example.com", "wrong password!!", `192.0.2.${i}`)).status).toBe(401);
    const limited = await signIn("owner@example.com", PASSWORD, "192.0.2.99");
    expect(limited.status).toBe(429);
    expect(limited.json.code).toBe("rate_limited");
    expect(limited.headers.get("content-type")).toContain("application/problem+json");
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(limited.json.detail).toContain("too many failed sign-in attempts");
    advance(30_000);
    expect((await signIn("owner@example.com", PASSWORD)).headers.get("retry-after")).toBe("30");
    advance(30_000);
    expect((await signIn("owner@example.com", PASSWORD)).status).toBe(200);
  });

  test("successful sign-ins do not count, and clear the email's failures", async () => {
    const { signIn } = await setup();
    for (let i = 0; i < 10; i++) expect((await signIn("owner@example.com", PASSWORD)).status).toBe(200);
    for (let round = 0; round < 3; round++) {
      // From different addresses, so only the email's count matters here.
      expect((await signIn("owner@example.com", "wrong password!!", `192.0.2.${2 * round}`)).status).toBe(401);
      expect((await signIn("owner@example.com", "wrong password!!", `192.0.2.${2 * round + 1}`)).status).toBe(401);
      expect((await signIn("owner@example.com", PASSWORD)).status).toBe(200);
    }
  });

  test("a burst of concurrent wrong passwords: exactly the limit is checked, the rest refused", async () => {
    const { signIn } = await setup();
    const burst = await Promise.all(Array.from({ length: 12 }, async (_, i) => signIn("owner@example.com", "wrong password!!", `192.0.2.${i}`)));
    expect(burst.map((r) => r.status).sort()).toEqual([...Array(3).fill(401), ...Array(9).fill(429)]);
  });

  test("failures per client IP, across emails; another IP is unaffected", async () => {
    const { signIn } = await setup();
    for (let i = 0; i < 5; i++) expect((await signIn(`nobody${i}@example.com`, "guess", "203.0.113.50")).status).toBe(401);
    const limited = await signIn("owner@example.com", PASSWORD, "203.0.113.50");
    expect(limited.status).toBe(429);
    expect(limited.json.code).toBe("rate_limited");
    expect((await signIn("owner@example.com", PASSWORD, "203.0.113.51")).status).toBe(200);
  });

  test("replicas on one database share the counts, and a restart keeps them", async () => {
    const { cp, signIn } = await setup();
    const other = replicaOf(cp);
    const signInOn = async (replica: ReturnType<typeof replicaOf>, password: string, ip: string) =>
      replica("POST", "/api/v1/auth/sessions", { email: "owner@example.com", password }, { "x-forwarded-for": ip });
    expect((await signIn("owner@example.com", "wrong password!!", "192.0.2.1")).status).toBe(401);
    expect((await signInOn(other, "wrong password!!", "192.0.2.2")).status).toBe(401);
    expect((await signIn("owner@example.com", "wrong password!!", "192.0.2.3")).status).toBe(401);
    const limited = await signInOn(other, PASSWORD, "192.0.2.4");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect((await signInOn(replicaOf(cp), PASSWORD, "192.0.2.5")).status).toBe(429);
  });

  test("a sign-in on one replica clears the email's failures counted on another", async () => {
    const { cp, signIn } = await setup();
    const other = replicaOf(cp);
    for (let i = 0; i < 2; i++) expect((await signIn("owner@example.com", "wrong password!!", `192.0.2.${i}`)).status).toBe(401);
    expect((await other("POST", "/api/v1/auth/sessions", { email: "owner@example.com", password: PASSWORD })).status).toBe(200);
    for (let i = 2; i < 4; i++) expect((await signIn("owner@example.com", "wrong password!!", `192.0.2.${i}`)).status).toBe(401);
    expect((await signIn("owner@example.com", PASSWORD, "192.0.2.9")).status).toBe(200);
  });

  test("X-Forwarded-For is ignored unless the operator trusts it", async () => {
    const cp = await testControlPlane({ config: { rateLimits: small } });
    const signIn = async (email: string, ip: string) => cp.call("POST", "/api/v1/auth/sessions", { body: { email, password: "guess" }, token: null, headers: { "x-forwarded-for": ip } });
    // Each attempt claims a different address and a different email: no key reaches a limit.
    for (let i = 0; i < 8; i++) expect((await signIn(`n${i}@example.com`, `192.0.2.${i}`)).status).toBe(401);
  });

  test("the console sign-in form shows the limit", async () => {
    const { cp, signIn } = await setup();
    for (let i = 0; i < 3; i++) await signIn("owner@example.com", "wrong password!!");
    const page = await cp.call("GET", "/sign-in", { token: null });
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const res = await cp.app.handle(
      new Request("http://localhost/sign-in", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie },
        body: new URLSearchParams({ _csrf: csrf, email: "owner@example.com", password: PASSWORD }).toString(),
      }),
    );
    expect(res.status).toBe(429);
    expect(await res.text()).toContain("too many failed sign-in attempts");
  });
});

describe("svc login limits", () => {
  test("login requests per client IP", async () => {
    const { cp, advance } = await setup();
    const create = async (ip: string) => cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null, headers: { "x-forwarded-for": ip } });
    expect((await create("203.0.113.9")).status).toBe(201);
    expect((await create("203.0.113.9")).status).toBe(201);
    const limited = await create("203.0.113.9");
    expect(limited.status).toBe(429);
    expect(limited.json.code).toBe("rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await create("203.0.113.10")).status).toBe(201);
    advance(60_000);
    expect((await create("203.0.113.9")).status).toBe(201);
  });

  test("login requests per client IP, counted across replicas and restarts", async () => {
    const { cp } = await setup();
    const create = async (replica: ReturnType<typeof replicaOf>) => replica("POST", "/api/v1/auth/login-requests", {}, { "x-forwarded-for": "203.0.113.9" });
    const [a, b] = [replicaOf(cp), replicaOf(cp)];
    expect((await create(a)).status).toBe(201);
    expect((await create(b)).status).toBe(201);
    expect((await create(a)).status).toBe(429);
    expect((await create(replicaOf(cp))).status).toBe(429);
  });

  test("concurrent login requests from one IP on several replicas: exactly the limit is created", async () => {
    const { cp } = await setup();
    const replicas = [replicaOf(cp), replicaOf(cp), replicaOf(cp)];
    const answers = await Promise.all(replicas.flatMap((r) => [1, 2, 3].map(async () => r("POST", "/api/v1/auth/login-requests", {}, { "x-forwarded-for": "203.0.113.9" }))));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 429, 429, 429, 429, 429, 429, 429]);
  });

  test("a poll faster than the advertised interval is 429 and consumes nothing", async () => {
    const { cp, advance } = await setup();
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    expect(lr.interval_seconds).toBe(2);
    const poll = async (secret = lr.poll_secret) => cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { body: { poll_secret: secret }, token: null });
    expect((await poll()).status).toBe(428);
    // Approve, then poll too soon: refused, and the token is still there for the next poll.
    const s = await cp.call("POST", "/api/v1/auth/sessions", { body: { email: "owner@example.com", password: PASSWORD }, token: null });
    const cookie = s.headers.get("set-cookie")!.split(";")[0]!;
    expect((await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: { cookie, "x-csrf-token": s.json.csrf_token } })).status).toBe(200);
    advance(1000);
    const fast = await poll();
    expect(fast.status).toBe(429);
    expect(fast.json.code).toBe("rate_limited");
    expect(fast.json.interval_seconds).toBe(2);
    expect(fast.headers.get("retry-after")).toBe("1");
    // A wrong secret is not counted as a poll (nobody else can slow the CLI down).
    expect((await poll("svc_lp_wrong")).status).toBe(404);
    advance(1000);
    const got = await poll();
    expect(got.status).toBe(200);
    expect(got.json.token).toMatch(/^svc_at_/);
    advance(2000);
    expect((await poll()).status).toBe(410);
  });

  test("the poll interval holds across replicas and restarts: the last poll is kept on the request", async () => {
    const { cp, advance } = await setup();
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    const poll = async (replica: ReturnType<typeof replicaOf>) => replica("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { poll_secret: lr.poll_secret });
    const [a, b] = [replicaOf(cp), replicaOf(cp)];
    expect((await poll(a)).status).toBe(428);
    advance(1000);
    const fast = await poll(b);
    expect(fast.status).toBe(429);
    expect(fast.headers.get("retry-after")).toBe("1");
    expect((await poll(replicaOf(cp))).status).toBe(429);
    advance(1000);
    expect((await poll(b)).status).toBe(428);
  });

  test("concurrent polls on several replicas: one is answered, the others are too fast", async () => {
    const { cp } = await setup();
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    const replicas = [replicaOf(cp), replicaOf(cp), replicaOf(cp), replicaOf(cp)];
    const answers = await Promise.all(replicas.map(async (r) => r("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { poll_secret: lr.poll_secret })));
    expect(answers.map((r) => r.status).sort()).toEqual([428, 429, 429, 429]);
    for (const r of answers.filter((r) => r.status === 429)) expect(r.headers.get("retry-after")).toBe("2");
  });
});
