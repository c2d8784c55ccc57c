// Real MCP servers for the tests (never a protocol double): the official Python SDK's
// MCPServer over Streamable HTTP with TLS (notes_server.py), and the PyPI stdio servers
// mcp-server-time and mcp-server-git, from the venv scripts/mcp-servers-venv.sh caches.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BundleToolServer } from "../../../src/contract/bundle.ts";
import { freePort } from "../controlplane-process.ts";
import { testTls } from "../tls.ts";
import { mcpServersBin, startPythonMcpServer, waitForAnswer } from "./python-https.ts";

export { mcpServersBin };

export type NotesServer = { url: string; port: number; calls(): { tool: string; args: Record<string, unknown> }[]; stop(): Promise<void> };

/** notes_server.py over https on a free port; resolves once it answers. `otlp`: its spans exported there (the traces endpoint). */
export async function startNotesServer(opts: { requireHeader?: string; otlp?: string } = {}): Promise<NotesServer> {
  const args = [...(opts.requireHeader ? ["--require-header", opts.requireHeader] : []), ...(opts.otlp ? ["--otlp", opts.otlp] : [])];
  const s = await startPythonMcpServer<{ tool: string; args: Record<string, unknown> }>("notes_server.py", { logFlag: "--calls", args });
  return { url: s.url, port: s.port, calls: s.entries, stop: s.stop };
}

/** A git repository with one commit, for mcp-server-git. */
export function tempGitRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-git-"));
  const git = (...args: string[]) => {
    const r = Bun.spawnSync(["git", "-C", dir, ...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" },
    });
    if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  };
  git("init", "-q");
  writeFileSync(join(dir, "README.md"), "hello\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "first commit");
  return dir;
}

/** Bundle entries for the three servers (tests adjust names and options). */
export const toolServer = {
  http: (url: string, over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_notes",
    name: "notes",
    transport: "http",
    url,
    command: null,
    args: [],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
  time: (over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_time",
    name: "time",
    transport: "stdio",
    url: null,
    command: join(mcpServersBin(), "mcp-server-time"),
    args: ["--local-timezone", "UTC"],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
  /** notes_server.py over stdio, its calls logged to `callLog` and, with `otlp`, its spans exported there. */
  notesStdio: (callLog: string, otlp?: string, over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_notes_stdio",
    name: "notes_stdio",
    transport: "stdio",
    url: null,
    command: join(mcpServersBin(), "python"),
    args: [join(import.meta.dir, "notes_server.py"), "--stdio", "--calls", callLog, ...(otlp ? ["--otlp", otlp] : [])],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
  git: (repo: string, over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_git",
    name: "git",
    transport: "stdio",
    url: null,
    command: join(mcpServersBin(), "mcp-server-git"),
    args: ["--repository", repo],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
};

/**
 * The npm servers customers run (issue 31), from the project's devDependencies: nothing is
 * downloaded at test time. They run under the test's own Bun, as a stdio command would in the image.
 */
const npmServer = (pkg: string) => join(import.meta.dir, "../../../node_modules/@modelcontextprotocol", pkg, "dist/index.js");
export const EVERYTHING_JS = npmServer("server-everything");
export const FILESYSTEM_JS = npmServer("server-filesystem");

export const npmToolServer = {
  everything: (over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_everything",
    name: "everything",
    transport: "stdio",
    url: null,
    command: process.execPath,
    args: [EVERYTHING_JS, "stdio"],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
  files: (dir: string, over: Partial<BundleToolServer> = {}): BundleToolServer => ({
    id: "ts_files",
    name: "files",
    transport: "stdio",
    url: null,
    command: process.execPath,
    args: [FILESYSTEM_JS, dir],
    secrets_sealed: null,
    allowed_tools: null,
    access_overrides: {},
    ...over,
  }),
};

export type EverythingHttp = { url: string; stop(): Promise<void> };

/**
 * server-everything over Streamable HTTP (`streamableHttp`, plain http on a loopback port),
 * behind a TLS front of the test CA: svc reaches MCP servers over https only, as a customer's
 * would be behind its ingress. The front streams both ways (SSE answers relayed as they come).
 */
export async function startEverythingHttp(): Promise<EverythingHttp> {
  const inner = freePort();
  const proc = Bun.spawn([process.execPath, EVERYTHING_JS, "streamableHttp"], { env: { ...process.env, PORT: String(inner) }, stdout: "ignore", stderr: "ignore" });
  const tls = testTls();
  const front = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(tls.certFile, "utf8"), key: readFileSync(tls.keyFile, "utf8") },
    idleTimeout: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.delete("host");
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const res = await fetch(`http://127.0.0.1:${inner}${u.pathname}${u.search}`, { method: req.method, headers, body, redirect: "manual" });
      return new Response(res.body, { status: res.status, headers: res.headers });
    },
  });
  await waitForAnswer(proc, `http://127.0.0.1:${inner}/mcp`, "server-everything", { everyMs: 100 });
  return {
    url: `https://127.0.0.1:${front.port}/mcp`,
    async stop() {
      await front.stop(true);
      proc.kill();
      await proc.exited;
    },
  };
}

export type Verdict = { verdict: "accepted" | "refused"; why?: string; claims?: Record<string, unknown>; kid?: string; token: string | null };
export type IdentityServer = { url: string; verdicts(): Verdict[]; stop(): Promise<void> };

/**
 * identity_server.py over https (issue 32): an in-house MCP server that verifies svc's identity
 * assertions against the control plane's JWKS with PyJWT, refusing replayed jtis. Up once it
 * answers anything (a 401 for the request without an assertion).
 */
export async function startIdentityServer(o: { jwks: string; issuer: string; audience: string; header?: string; jwksLifespanSeconds?: number }): Promise<IdentityServer> {
  const args = ["--jwks", o.jwks, "--issuer", o.issuer, "--audience", o.audience, "--header", o.header ?? "X-Svc-Identity", "--jwks-lifespan", String(o.jwksLifespanSeconds ?? 300)];
  const s = await startPythonMcpServer<Verdict>("identity_server.py", { logFlag: "--log", args });
  return { url: s.url, verdicts: s.entries, stop: s.stop };
}
