// The stdio MCP transport, its process started by execa (issue 36: the chosen package for
// child processes). What execa gives over the SDK's own transport (cross-spawn, hand-written
// clean-up): the server is killed when the proxy exits, however it exits (Bun does not kill
// children when the parent dies, FACTS.md; execa's `cleanup`), and a server that ignores
// SIGTERM gets SIGKILL after STOP_GRACE_MS (`forceKillAfterDelay`). The framing (one JSON
// message a line) is the SDK's own ReadBuffer and serializeMessage.
// Measured against the SDK's transport and a Bun.spawn one: bench/stdio-spawn.ts, docs/mcp.md.
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { execa } from "execa";

/** How long a server has to exit after its stdin closes, and again after SIGTERM. */
export const STOP_GRACE_MS = 2000;

export type StdioServer = { command: string; args?: string[]; env: Record<string, string>; cwd?: string };

// The subprocess is a promise of its result and a process at once: made async, it would be
// only the promise.
// eslint-disable-next-line @typescript-eslint/promise-function-async
function spawnServer(server: StdioServer) {
  return execa(server.command, server.args ?? [], {
    env: server.env,
    extendEnv: false, // the server sees only what it is given: no proxy secrets
    cwd: server.cwd,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "ignore",
    buffer: false,
    reject: false,
    cleanup: true,
    forceKillAfterDelay: STOP_GRACE_MS,
  });
}

export class ExecaStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private proc: ReturnType<typeof spawnServer> | undefined;
  private readonly buffer = new ReadBuffer();

  constructor(private readonly server: StdioServer) {}

  /** The server's pid while it runs (the upstream kills a server that stops answering). */
  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  async start(): Promise<void> {
    if (this.proc) throw new Error("the stdio transport is already started");
    const proc = spawnServer(this.server);
    this.proc = proc;
    proc.stdout.on("data", (chunk: Buffer) => {
      try {
        this.buffer.append(chunk); // bounded: a line over 10 MiB is refused, not kept
      } catch (e) {
        this.onerror?.(e as Error);
        void this.close(); // the stream is out of frame: nothing after it can be trusted
        return;
      }
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (e) {
          this.onerror?.(e as Error); // one bad line: the next ones may still be read
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    proc.stdin.on("error", (e) => this.onerror?.(e));
    // execa's result comes once the process is gone and its pipes are closed.
    void proc.then(() => {
      if (this.proc === proc) this.proc = undefined;
      this.buffer.clear();
      this.onclose?.();
    });
    await new Promise<void>((resolve, reject) => {
      proc.nodeChildProcess.once("spawn", () => resolve());
      proc.nodeChildProcess.once("error", reject);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.proc?.stdin;
    if (!stdin) throw new Error("the stdio server is not running");
    if (!stdin.write(serializeMessage(message))) await new Promise<void>((resolve) => stdin.once("drain", () => resolve()));
  }

  /** Close stdin (the MCP way to ask a stdio server to stop), then SIGTERM, then SIGKILL. */
  async close(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    this.proc = undefined;
    proc.stdin.end();
    const gone = proc.then(() => true);
    const timeout = async () => new Promise<false>((resolve) => setTimeout(() => resolve(false), STOP_GRACE_MS).unref());
    if (!(await Promise.race([gone, timeout()]))) proc.kill(); // SIGTERM, and SIGKILL after the grace
    await gone;
  }
}
