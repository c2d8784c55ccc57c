import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { startModelServer } from "../../../test/support/model-server.ts";
import { EndpointAttempts } from "./endpoint-attempts.ts";
import { EndpointProbe } from "./endpoint-probe.ts";

describe("EndpointProbe (issue 19): readiness knows the endpoint before the first chat", () => {
  test("a real HTTPS endpoint with its CA trusted is reached with no model call; without the CA the TLS error is kept", async () => {
    const server = startModelServer();
    try {
      const trusted = new EndpointAttempts();
      await new EndpointProbe({ attempts: trusted, ca: [...rootCertificates, readFileSync(server.caFile, "utf8")] }).sync({ id: "mp_1", endpoint: server.endpoint });
      expect(trusted.list()).toEqual([{ profile_id: "mp_1", state: "ok", error: null, at: expect.any(String) }]);
      // a GET of the base URL: no chat completion asked for, no key sent
      expect(server.probes).toHaveLength(1);
      expect(server.probes[0]).toMatchObject({ method: "GET", path: "/v1" });
      expect(server.probes[0]!.headers.authorization).toBeUndefined();
      expect(server.requests).toEqual([]);

      const untrusted = new EndpointAttempts();
      await new EndpointProbe({ attempts: untrusted, ca: null }).sync({ id: "mp_1", endpoint: server.endpoint });
      const [a] = untrusted.list();
      expect(a).toMatchObject({ profile_id: "mp_1", state: "unreachable" });
      expect(a!.error).toMatch(/certificate|self.signed|verify/i);
    } finally {
      await server.stop();
    }
  });

  test("a refused connection is kept with its error", async () => {
    const attempts = new EndpointAttempts();
    await new EndpointProbe({ attempts, ca: null }).sync({ id: "mp_1", endpoint: "https://127.0.0.1:1/v1" });
    expect(attempts.list()[0]).toMatchObject({ profile_id: "mp_1", state: "unreachable", error: expect.any(String) });
  });

  test("once per profile and endpoint: a new endpoint is probed again; a newer model call's attempt is kept", async () => {
    const attempts = new EndpointAttempts();
    const urls: string[] = [];
    const probe = new EndpointProbe({
      attempts,
      ca: null,
      fetchImpl: (async (url: string) => {
        urls.push(url);
        if (url.includes("slow")) {
          await Bun.sleep(20);
          attempts.record("mp_2", null); // a model call answered while the probe was under way
          throw new Error("connect ETIMEDOUT");
        }
        return new Response("not here", { status: 404 });
      }) as unknown as typeof fetch,
    });
    await probe.sync({ id: "mp_1", endpoint: "https://a.example/v1" });
    await probe.sync({ id: "mp_1", endpoint: "https://a.example/v1" });
    expect(urls).toEqual(["https://a.example/v1"]);
    expect(attempts.get("mp_1")).toMatchObject({ state: "ok" }); // any HTTP answer (404) is a reach
    await probe.sync({ id: "mp_1", endpoint: "https://b.example/v1" });
    expect(urls).toHaveLength(2);
    await probe.sync(null);
    await probe.sync({ id: "mp_2", endpoint: "https://slow.example/v1" });
    expect(attempts.get("mp_2")).toMatchObject({ state: "ok", error: null });
  });
});
