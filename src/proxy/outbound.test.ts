// The runtime's outbound rule for admin-set URLs (issue 31): private, loopback, link-local and
// metadata addresses refused unless SVC_PROXY_ALLOW_PRIVATE_OUTBOUND names them, checked at
// every request, and the connection made to the address checked (DNS rebinding).
import { afterAll, describe, expect, test } from "bun:test";
import { allowedByList } from "../contract/outbound.ts";
import { testTls } from "../../test/support/tls.ts";
import { guardedFetch, OutboundRefused, outboundGuard } from "./outbound.ts";

describe("the allow-list", () => {
  test("names hosts, addresses and CIDR blocks, or everything", () => {
    expect(allowedByList(["127.0.0.1"], "127.0.0.1", "127.0.0.1")).toBe(true);
    expect(allowedByList(["10.0.0.0/8"], "llm.internal", "10.2.3.4")).toBe(true);
    expect(allowedByList(["10.0.0.0/8"], "llm.internal", "11.2.3.4")).toBe(false);
    expect(allowedByList(["fd00::/8"], "x", "fd12::1")).toBe(true);
    expect(allowedByList(["LLM.internal"], "llm.internal", "10.2.3.4")).toBe(true);
    expect(allowedByList(["::1"], "[::1]", "::1")).toBe(true);
    expect(allowedByList(["*"], "metadata", "169.254.169.254")).toBe(true);
    expect(allowedByList([], "localhost", "127.0.0.1")).toBe(false);
    expect(allowedByList(["127.0.0.1"], "evil", "169.254.169.254")).toBe(false);
  });
});

describe("outboundGuard", () => {
  const url = (u: string) => new URL(u);
  test.each([
    "https://169.254.169.254/mcp",
    "https://10.1.2.3/mcp",
    "https://127.0.0.1:8420/api",
    "https://0x7f000001/x",
    "https://[::1]/x",
    "https://[fd00::5]/x",
    "https://100.64.0.1/x",
    "https://[::ffff:169.254.169.254]/x",
  ])("%s is refused, naming the setting", async (u) => {
    const guard = outboundGuard({ allow: [], what: "MCP server" });
    const e = await guard(url(u)).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OutboundRefused);
    expect((e as Error).message).toContain("SVC_PROXY_ALLOW_PRIVATE_OUTBOUND");
  });

  test("a name is resolved at each request: one that resolves to a private address is refused, then, rebound, still refused", async () => {
    const answers: string[][] = [["93.184.216.34"], ["169.254.169.254"]];
    let now = 0;
    const guard = outboundGuard({ allow: [], what: "MCP server", now: () => now, lookup: async () => answers.shift()!.map((address) => ({ address })) });
    const first = await guard(url("https://mcp.example.com/mcp"));
    // the connection goes to the address checked, the host name kept for the certificate and Host
    expect(first.url.href).toBe("https://93.184.216.34/mcp");
    expect(first.headers).toEqual({ host: "mcp.example.com" });
    expect(first.serverName).toBe("mcp.example.com");
    now += 11_000;
    await expect(guard(url("https://mcp.example.com/mcp"))).rejects.toThrow("resolving to 169.254.169.254, a link-local address");
  });

  test("a name resolving to several addresses is refused when any is not public", async () => {
    const guard = outboundGuard({ allow: [], what: "the model endpoint", lookup: async () => [{ address: "93.184.216.34" }, { address: "10.0.0.1" }] });
    await expect(guard(url("https://llm.example.com/v1"))).rejects.toThrow("10.0.0.1, a private address");
  });

  test("the allow-list lets named private hosts through, pinned", async () => {
    const guard = outboundGuard({ allow: ["llm.internal"], what: "the model endpoint", lookup: async () => [{ address: "10.9.9.9" }] });
    expect((await guard(url("https://llm.internal:8443/v1"))).url.href).toBe("https://10.9.9.9:8443/v1");
  });

  const tls = testTls();
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: tls.cert, key: tls.key }, fetch: (r) => new Response(`host ${r.headers.get("host")}`) });
  afterAll(async () => server.stop(true));

  test("guardedFetch reaches the pinned address and verifies the certificate against the host name", async () => {
    const f = guardedFetch(outboundGuard({ allow: ["localhost"], what: "the model endpoint", lookup: async () => [{ address: "127.0.0.1" }] }));
    const r = await f(`https://localhost:${server.port}/v1`, { tls: { ca: tls.ca } } as RequestInit);
    expect(await r.text()).toBe(`host localhost:${server.port}`);
    // a name the certificate does not carry, pinned to the same address: the TLS check still refuses it
    const g = guardedFetch(outboundGuard({ allow: ["*"], what: "the model endpoint", lookup: async () => [{ address: "127.0.0.1" }] }));
    await expect(g(`https://wrong.example:${server.port}/v1`, { tls: { ca: tls.ca } } as RequestInit)).rejects.toThrow();
  });
});
