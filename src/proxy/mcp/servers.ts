// The MCP servers assigned to the agent, kept in step with the bundle: a server whose
// connection settings changed is reconnected, a removed one closed, and every one is listed
// again (tools/list) on each sync. What is reachable on this replica now is what its gateway
// serves; what is not is reported (state unreachable + error) and its calls end "unreachable".
// What each listing found is reported to the control plane (catalogue.ts there) only when it
// changed, and a listing that failed reports nothing: the agent's tools stay registered while a
// server is down, on this replica or another (issue 31). Tools a server lists that cannot be
// served are logged once per change, not once per poll.
import type { BundleToolServer } from "../../contract/bundle.ts";
import type { ToolServerStatus } from "../../contract/local-api.ts";
import type { McpToolsReport } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import type { CredentialSync } from "../link/credential-sync.ts";
import { type McpToolEntry, type ServerTools, serverTools } from "./registry.ts";
import type { AssertionKeys } from "./assertion.ts";
import { Upstream, connectionKey, type UpstreamOptions } from "./upstream.ts";
import { bearerOf, type OauthTokens } from "./oauth.ts";

export type McpServersOptions = {
  credentials: Pick<CredentialSync, "unseal">;
  ca: string[] | null;
  log: Logger;
  /** The organization's identity-assertion key, for servers that ask for assertions (issue 32). */
  assertionKeys?: Pick<AssertionKeys, "mint">;
  /** The served tool set changed between syncs (a stdio server died or came back). */
  onChange?: () => void;
  upstream?: Pick<UpstreamOptions, "connectTimeoutMs" | "callTimeoutMs" | "resultLimitBytes" | "pingIntervalMs" | "pingTimeoutMs" | "connectGuard">;
  /** The users' tokens for OAuth servers (issue 32): their listing connection carries the listing grant's. */
  oauth?: OauthTokens;
};

type Held = {
  server: BundleToolServer;
  key: string;
  upstream: Upstream | null;
  error: string | null;
  /** The last successful listing, mapped; null until one succeeded. */
  listing: ServerTools | null;
  /** What the control plane last took for this server (the report's JSON), and the skipped tools last logged. */
  reported: string | null;
  loggedSkips: string | null;
};

export class McpServers {
  private held = new Map<string, Held>();
  private tools = new Map<string, { entry: McpToolEntry; upstream: Upstream }>();
  private syncing: Promise<void> = Promise.resolve();

  constructor(private readonly o: McpServersOptions) {}

  /** Bring the connections in line with the bundle's servers and list every one again. */
  async sync(servers: readonly BundleToolServer[]): Promise<void> {
    this.syncing = this.syncing.then(async () => this.doSync(servers));
    return this.syncing;
  }

  /** Resolves when the syncs asked so far are done (the boot listing). */
  async settled(): Promise<void> {
    return this.syncing;
  }

  private async doSync(servers: readonly BundleToolServer[]): Promise<void> {
    const wanted = new Map(servers.map((s) => [s.name, s]));
    for (const [name, h] of this.held) {
      if (!wanted.has(name) || wanted.get(name)!.id !== h.server.id || connectionKey(wanted.get(name)!) !== h.key) {
        await h.upstream?.close();
        this.held.delete(name);
      }
    }
    for (const s of servers) {
      const h = this.held.get(s.name);
      if (h) {
        h.server = s; // allow-list and overrides may change without a reconnect
        continue;
      }
      this.held.set(s.name, await this.open(s));
    }
    await Promise.all([...this.held.values()].map(async (h) => h.upstream?.refresh()));
    this.rebuild();
  }

  private async open(server: BundleToolServer): Promise<Held> {
    const held: Held = { server, key: connectionKey(server), upstream: null, error: null, listing: null, reported: null, loggedSkips: null };
    let secrets: Record<string, string> = {};
    if (server.secrets_sealed) {
      try {
        const doc = JSON.parse(await this.o.credentials.unseal(server.secrets_sealed)) as unknown;
        if (!doc || typeof doc !== "object" || Array.isArray(doc) || Object.values(doc).some((v) => typeof v !== "string")) throw new Error("not an object of strings");
        secrets = doc as Record<string, string>;
      } catch {
        held.error = "its secrets are not sealed to this runtime's credential-sync key (or are not a JSON object of strings); seal them again";
        this.o.log.warn("mcp server secrets unusable", { server: server.name });
        return held;
      }
    }
    if (server.transport === "http" ? !server.url : !server.command) {
      held.error = server.transport === "http" ? "no url" : "no command";
      return held;
    }
    if (server.auth === "oauth" && !this.o.oauth) {
      held.error = "it uses OAuth and this runtime has no control plane to ask for tokens";
      return held;
    }
    const keys = this.o.assertionKeys;
    const asks = server.assertion;
    if (asks && !keys) {
      held.error = "it asks for identity assertions and this runtime signs none";
      return held;
    }
    held.upstream = new Upstream({
      server,
      secrets,
      ...(asks && keys ? { assertion: { header: asks.header, mint: async (subject) => keys.mint(asks.header, asks.audience, subject) } } : {}),
      ca: this.o.ca,
      log: this.o.log,
      ...this.o.upstream,
      ...(server.auth === "oauth" ? { authorize: bearerOf(this.o.oauth!, server.name, null) } : {}),
      onChange: () => {
        this.rebuild();
        this.o.onChange?.();
      },
    });
    return held;
  }

  private rebuild(): void {
    const tools = new Map<string, { entry: McpToolEntry; upstream: Upstream }>();
    for (const h of this.held.values()) {
      if (!h.upstream || h.upstream.state !== "ok") continue;
      h.listing = serverTools(h.server, h.upstream.tools);
      const skips = JSON.stringify(h.listing.skipped);
      if (skips !== h.loggedSkips) {
        h.loggedSkips = skips;
        for (const s of h.listing.skipped) this.o.log.warn("mcp tool not served", { server: h.server.name, tool: s.tool.slice(0, 200), why: s.why });
      }
      for (const entry of h.listing.entries) tools.set(entry.name, { entry, upstream: h.upstream });
    }
    this.tools = tools;
  }

  /** The governed tools this replica serves now, in a stable order. */
  entries(): McpToolEntry[] {
    return [...this.tools.values()].map((t) => t.entry).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  find(name: string): { entry: McpToolEntry; upstream: Upstream } | undefined {
    return this.tools.get(name);
  }

  /**
   * A server this replica cannot reach now, asked for by a call: try it again at once (a
   * crashed stdio server restarted, an HTTP server back) rather than at the next poll, and
   * wait at most `waitMs` for it. Resolves to what serves the tool now, if anything.
   */
  async reach(serverName: string, tool: string, waitMs: number): Promise<{ entry: McpToolEntry; upstream: Upstream } | { error: string }> {
    const h = this.held.get(serverName);
    if (!h?.upstream) return { error: h?.error ?? "not connected" };
    const tried = await Promise.race([h.upstream.retryNow().then(() => true), Bun.sleep(waitMs).then(() => false)]);
    if (tried && h.upstream.state === "ok") this.rebuild();
    return this.tools.get(tool) ?? { error: h.upstream.error ?? (h.upstream.state === "ok" ? `it lists no tool "${tool}" now` : "connecting") };
  }

  /** What changed since the last report the control plane took: the servers whose last successful listing differs. */
  pendingReport(): { report: McpToolsReport; taken(): void } | null {
    const changed: Array<{ h: Held; json: string }> = [];
    for (const h of this.held.values()) {
      if (!h.listing || h.upstream?.state !== "ok") continue;
      const json = JSON.stringify([h.listing.listed, h.listing.skipped]);
      if (json !== h.reported) changed.push({ h, json });
    }
    if (changed.length === 0) return null;
    return {
      report: { servers: changed.map(({ h }) => ({ server: h.server.name, tools: h.listing!.listed, skipped: h.listing!.skipped })) },
      taken: () => {
        for (const { h, json } of changed) h.reported = json;
      },
    };
  }

  status(): ToolServerStatus[] {
    return [...this.held.values()].map((h) => {
      const ok = h.upstream?.state === "ok";
      const count = ok ? (h.listing?.entries.length ?? 0) : 0;
      return { name: h.server.name, state: ok ? "ok" : "unreachable", error: ok ? null : (h.error ?? h.upstream?.error ?? "connecting"), tool_count: count };
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.held.values()].map(async (h) => h.upstream?.close()));
    this.held.clear();
    this.tools.clear();
  }
}
