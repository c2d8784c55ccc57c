// Real MCP servers for the tests (never a protocol double): the official Python SDK's
// MCPServer over Streamable HTTP with TLS (notes_server.py), and the PyPI stdio servers
// mcp-server-time and mcp-server-git, from the venv scripts/mcp-servers-venv.sh caches.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BundleToolServer } from "../../../src/contract/bundle.ts";
import { freePort } from "../controlplane-process.ts";
import { testTls } from "../tls.ts";

let bin: string | null = null;

/** The venv's bin directory (installed once by the repo script, cached under /var/cache/svc). */
export function mcpServersBin(): string {
  if (bin) return bin;
  const r = Bun.spawnSync(["bash", join(import.meta.dir, "../../../scripts/mcp-servers-venv.sh")], { stdout: "pipe", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error("scripts/mcp-servers-venv.sh failed");
  bin = r.stdout.toString().trim().split("\n").at(-1)!;
  return bin;
}

export type NotesServer = { url: string; port: number; calls(): { tool: string; args: Record<string, unknown> }[]; stop(): Promise<void> };

/** notes_server.py over https on a free port; resolves once it answers. `otlp`: its spans exported there (the traces endpoint). */
export async function startNotesServer(opts: { requireHeader?: string; otlp?: string } = {}): Promise<NotesServer> {
  const tls = testTls();
  const port = freePort();
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-notes-"));
  const callLog = join(dir, "calls.jsonl");
  writeFileSync(callLog, "");
  const argv = [join(mcpServersBin(), "python"), join(import.meta.dir, "notes_server.py"), "--port", String(port), "--cert", tls.certFile, "--key", tls.keyFile, "--calls", callLog];
  if (opts.requireHeader) argv.push("--require-header", opts.requireHeader);
  if (opts.otlp) argv.push("--otlp", opts.otlp);
  const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "inherit" });
  const url = `https://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`notes_server.py exited with ${proc.exitCode}`);
    const up = await fetch(url, { method: "GET", tls: { ca: tls.ca }, signal: AbortSignal.timeout(1000) } as RequestInit).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error("notes_server.py did not answer within 30 s");
    await Bun.sleep(200);
  }
  return {
    url,
    port,
    calls: () =>
      readFileSync(callLog, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
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
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server-everything exited with ${proc.exitCode}`);
    const up = await fetch(`http://127.0.0.1:${inner}/mcp`, { method: "GET", signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error("server-everything did not answer within 30 s");
    await Bun.sleep(100);
  }
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
 * assertions against the control plane's JWKS with PyJWT, refusing replayed jtis.
 */
export async function startIdentityServer(o: { jwks: string; issuer: string; audience: string; header?: string; jwksLifespanSeconds?: number }): Promise<IdentityServer> {
  const tls = testTls();
  const port = freePort();
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-identity-"));
  const verdicts = join(dir, "verdicts.jsonl");
  writeFileSync(verdicts, "");
  const argv = [join(mcpServersBin(), "python"), join(import.meta.dir, "identity_server.py"), "--port", String(port), "--cert", tls.certFile, "--key", tls.keyFile, "--log", verdicts];
  argv.push("--jwks", o.jwks, "--issuer", o.issuer, "--audience", o.audience, "--header", o.header ?? "X-Svc-Identity", "--jwks-lifespan", String(o.jwksLifespanSeconds ?? 300));
  const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "inherit" });
  const url = `https://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 30_000;
  // Up once it answers anything (a 401 for the request without an assertion).
  while (
    !(await fetch(url, { method: "GET", tls: { ca: tls.ca }, signal: AbortSignal.timeout(1000) } as RequestInit).then(
      () => true,
      () => false,
    ))
  ) {
    if (proc.exitCode !== null) throw new Error(`identity_server.py exited with ${proc.exitCode}`);
    if (Date.now() > deadline) throw new Error("identity_server.py did not answer within 30 s");
    await Bun.sleep(200);
  }
  return {
    url,
    verdicts: () =>
      readFileSync(verdicts, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Verdict),
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}
