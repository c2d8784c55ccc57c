import { expect, test } from "bun:test";
import { testTls } from "./tls.ts";

test("the test CA's server certificate is trusted only with the CA", async () => {
  const tls = testTls();
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: tls.cert, key: tls.key }, fetch: () => new Response("ok") });
  try {
    const url = `https://127.0.0.1:${server.port}/`;
    const trusted = await fetch(url, { tls: { ca: tls.ca } });
    expect(await trusted.text()).toBe("ok");
    await expect(fetch(url)).rejects.toThrow();
  } finally {
    void server.stop(true);
  }
});
