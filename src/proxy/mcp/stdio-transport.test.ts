// The execa stdio transport against a real MCP server (server-everything over stdio): it
// speaks MCP, and the server does not outlive the proxy that started it, however the proxy ends.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { EVERYTHING_JS } from "../../../test/support/mcp/servers.ts";
import { ExecaStdioTransport } from "./stdio-transport.ts";
import { alive } from "../../../test/support/processes.ts";

const SERVER = EVERYTHING_JS;
test("lists and calls a real server's tools, and close() stops it", async () => {
  const transport = new ExecaStdioTransport({ command: process.execPath, args: [SERVER, "stdio"], env: getDefaultEnvironment() });
  const client = new Client({ name: "t", version: "1" });
  await client.connect(transport);
  const pid = transport.pid!;
  expect(alive(pid)).toBe(true);
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("echo");
  expect(JSON.stringify(await client.callTool({ name: "echo", arguments: { message: "hi" } }))).toContain("hi");
  await client.close();
  expect(alive(pid)).toBe(false);
  expect(transport.pid).toBeNull();
});

// A server that lingers once its stdin closes (server-everything itself exits then): the
// wrapper runs it, then becomes `sleep`, keeping the pid the transport knows.
for (const end of ["process.exit(0)", "SIGTERM"] as const) {
  test(`a server lingering past its stdin's end does not outlive the proxy that started it (${end})`, async () => {
    const script = `
      import { Client } from "@modelcontextprotocol/sdk/client/index.js";
      import { ExecaStdioTransport } from ${JSON.stringify(join(import.meta.dir, "stdio-transport.ts"))};
      const t = new ExecaStdioTransport({ command: "sh", args: ["-c", ${JSON.stringify(`"${process.execPath}" "${SERVER}" stdio; exec sleep 30`)}], env: { PATH: process.env.PATH } });
      await new Client({ name: "t", version: "1" }).connect(t);
      console.log(t.pid);
      ${end === "SIGTERM" ? "setInterval(() => {}, 1000);" : "process.exit(0);"}`;
    const parent = Bun.spawn([process.execPath, "-e", script], { cwd: join(import.meta.dir, "../../.."), stdout: "pipe", stderr: "inherit" });
    const reader = parent.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const pid = Number(first.trim());
    expect(pid).toBeGreaterThan(0);
    if (end === "SIGTERM") parent.kill("SIGTERM");
    await parent.exited;
    for (let i = 0; i < 50 && alive(pid); i++) await Bun.sleep(100);
    expect(alive(pid)).toBe(false);
  }, 20_000);
}
