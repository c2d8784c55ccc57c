// The Microsoft Graph client of directory sync: client-credentials sign-in, then the
// directory application's service principal, its app-role assignments, the assigned groups'
// direct members and the directly assigned users, as one GraphSnapshot for plan().
// Follows @odata.nextLink, waits out 429/503 with Retry-After (bounded), and turns the
// failures an admin can fix (wrong secret, missing permission, wrong app id) into one
// sentence that says what to do. The bearer token is only ever sent to the Graph origin.
//
// The snapshot is all or nothing: plan() removes every membership the snapshot does not show,
// so a page that fails (404 included: a nextLink that expired, a group deleted meanwhile), a
// page without its `value` array, or a user that cannot be read fails the whole snapshot, and
// the run is recorded as failed with nothing applied. Only a missing service principal has its
// own message (a wrong app id).
import { rootCertificates } from "node:tls";
import { type GraphAssignment, type GraphSnapshot, type GraphUser, mappedRoles } from "./plan.ts";

export const DEFAULT_AUTHORITY_URL = "https://login.microsoftonline.com";
export const DEFAULT_GRAPH_URL = "https://graph.microsoft.com";
export const GRAPH_SCOPE_SUFFIX = "/.default";
export const USER_FIELDS = "id,displayName,mail,userPrincipalName,accountEnabled";

/** The application permissions the sync app needs (with admin consent). */
export const PERMISSIONS = {
  application: "Application.Read.All",
  groupMembers: "GroupMember.Read.All",
  users: "User.Read.All",
} as const;

export type GraphClientOptions = {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  authorityUrl: string;
  graphUrl: string;
  appId: string;
  /** PEM of an extra certificate authority to trust besides the system roots (tests, TLS-inspecting proxies). */
  extraCa?: string | undefined;
  signal?: AbortSignal;
  /** Retries of one request on 429/503/504 before giving up. */
  maxRetries?: number;
  /** A Retry-After longer than this fails the run instead of stalling it. */
  maxRetryAfterSeconds?: number;
  requestTimeoutMs?: number;
  /** Parallel user look-ups. */
  concurrency?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Called before every request with its URL; throws to refuse it (the outbound URL policy,
   * http/outbound.ts, which the sync service passes). Redirects are never followed.
   */
  checkUrl?: (url: string) => Promise<void>;
};

/** A failure talking to Entra ID or Graph; the message is meant for the sync report as is. */
export class GraphSyncError extends Error {
  override name = "GraphSyncError";
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

type GraphErrorBody = { error?: { code?: string; message?: string } | string; error_description?: string };

function trimBase(url: string): string {
  return url.replace(/\/+$/, "");
}

async function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
}

export class GraphClient {
  readonly #o: Required<Omit<GraphClientOptions, "extraCa" | "signal" | "checkUrl">> & Pick<GraphClientOptions, "extraCa" | "signal" | "checkUrl">;
  readonly #graph: string;
  readonly #tls: { ca: string[] } | undefined;
  #token: string | null = null;
  /** Requests made, for the report's counts. */
  requests = 0;

  constructor(options: GraphClientOptions) {
    this.#o = { maxRetries: 5, maxRetryAfterSeconds: 120, requestTimeoutMs: 30_000, concurrency: 8, sleep: abortableSleep, ...options };
    this.#graph = trimBase(options.graphUrl);
    this.#tls = options.extraCa ? { ca: [...rootCertificates, options.extraCa] } : undefined;
  }

  async #fetch(url: string, init: RequestInit): Promise<Response> {
    if (this.#o.checkUrl) await this.#o.checkUrl(url);
    const timeout = AbortSignal.timeout(this.#o.requestTimeoutMs);
    const signal = this.#o.signal ? AbortSignal.any([this.#o.signal, timeout]) : timeout;
    this.requests++;
    return fetch(url, { ...init, redirect: "error", signal, ...(this.#tls ? { tls: this.#tls } : {}) } as RequestInit);
  }

  /** Client-credentials sign-in: POST {authority}/{tenant}/oauth2/v2.0/token. */
  async signIn(): Promise<string> {
    const url = `${trimBase(this.#o.authorityUrl)}/${encodeURIComponent(this.#o.tenantId)}/oauth2/v2.0/token`;
    const form = new URLSearchParams({
      client_id: this.#o.clientId,
      client_secret: this.#o.clientSecret,
      scope: `${this.#graph}${GRAPH_SCOPE_SUFFIX}`,
      grant_type: "client_credentials",
    });
    let res: Response;
    try {
      res = await this.#fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" }, body: form });
    } catch (e) {
      throw new GraphSyncError(`could not reach the token endpoint ${url}: ${(e as Error).message}`);
    }
    const body = (await res.json().catch(() => ({}))) as GraphErrorBody & { access_token?: string };
    if (res.ok && body.access_token) {
      this.#token = body.access_token;
      return body.access_token;
    }
    const code = typeof body.error === "string" ? body.error : "";
    const description = (body.error_description ?? "").split(/\r?\n/)[0] ?? "";
    const detail = [code, description].filter(Boolean).join(": ") || `HTTP ${res.status}`;
    if (code === "invalid_client" || /AADSTS7000215|AADSTS7000222/.test(description)) {
      throw new GraphSyncError(`the client secret was refused by the token endpoint: ${detail}; set a valid secret with \`svc directory-sync set\``, res.status);
    }
    if (/AADSTS700016/.test(description) || code === "unauthorized_client") {
      throw new GraphSyncError(`the token endpoint does not know client id ${this.#o.clientId} in tenant ${this.#o.tenantId}: ${detail}; check --client-id and --tenant-id`, res.status);
    }
    if (/AADSTS90002|AADSTS900023/.test(description)) {
      throw new GraphSyncError(`the token endpoint does not know tenant ${this.#o.tenantId}: ${detail}; check --tenant-id and --authority-url`, res.status);
    }
    throw new GraphSyncError(`the token endpoint refused the sign-in of client ${this.#o.clientId} (HTTP ${res.status}): ${detail}`, res.status);
  }

  /**
   * GET a Graph URL (path under the Graph base, or a nextLink). Returns null on 404.
   * `permission` names what a 403 means is missing.
   */
  async get<T>(pathOrUrl: string, permission: string): Promise<T | null> {
    const url = pathOrUrl.startsWith("https://") || pathOrUrl.startsWith("http://") ? pathOrUrl : `${this.#graph}${pathOrUrl}`;
    if (new URL(url).origin !== new URL(this.#graph).origin) {
      throw new GraphSyncError(`Microsoft Graph sent a link to ${new URL(url).origin}, outside ${this.#graph}; refusing to send the token there`);
    }
    const what = `GET ${new URL(url).pathname}`;
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      if (!this.#token) await this.signIn();
      let res: Response;
      try {
        res = await this.#fetch(url, { headers: { authorization: `Bearer ${this.#token}`, accept: "application/json" } });
      } catch (e) {
        if (this.#o.signal?.aborted) throw new GraphSyncError("the sync was stopped");
        throw new GraphSyncError(`could not reach Microsoft Graph at ${this.#graph} (${what}): ${(e as Error).message}`);
      }
      if (res.ok) return (await res.json()) as T;
      const body = (await res.json().catch(() => ({}))) as GraphErrorBody;
      const err = typeof body.error === "object" ? body.error : undefined;
      const detail = [err?.code, err?.message].filter(Boolean).join(": ") || `HTTP ${res.status}`;
      if ((res.status === 429 || res.status === 503 || res.status === 504) && attempt < this.#o.maxRetries) {
        const header = Number(res.headers.get("retry-after"));
        const seconds = Number.isFinite(header) && header >= 0 ? header : 2 ** attempt;
        if (seconds > this.#o.maxRetryAfterSeconds) {
          throw new GraphSyncError(`Microsoft Graph throttled ${what} and asked to wait ${seconds} s (more than ${this.#o.maxRetryAfterSeconds} s); the next run will try again`, res.status);
        }
        await this.#o.sleep(seconds * 1000, this.#o.signal);
        continue;
      }
      if (res.status === 401 && !refreshed) {
        refreshed = true;
        this.#token = null;
        continue;
      }
      if (res.status === 404) return null;
      if (res.status === 403) {
        throw new GraphSyncError(`Microsoft Graph refused ${what} (403 ${detail}): grant the sync app ${this.#o.clientId} the application permission ${permission} and admin consent in Entra ID`, 403);
      }
      if (res.status === 429 || res.status === 503 || res.status === 504) {
        throw new GraphSyncError(`Microsoft Graph kept throttling ${what} after ${this.#o.maxRetries} retries (${detail}); the next run will try again`, res.status);
      }
      throw new GraphSyncError(`Microsoft Graph answered ${what} with HTTP ${res.status}: ${detail}`, res.status);
    }
  }

  /**
   * Every item of a collection, following @odata.nextLink until it is absent. Any page that is
   * not a 200 with a `value` array fails the whole list (a partial list would read as removals).
   */
  async list<T>(path: string, permission: string, what: string): Promise<T[]> {
    const out: T[] = [];
    const seen = new Set<string>();
    let next: string | undefined = path;
    for (let page = 1; next; page++) {
      if (seen.has(next)) throw new GraphSyncError(`Microsoft Graph sent the same @odata.nextLink twice while listing ${what}; nothing was applied, the next run will try again`);
      seen.add(next);
      const body: { value?: unknown; "@odata.nextLink"?: unknown } | null = await this.get(next, permission);
      const where = page === 1 ? what : `page ${page} of ${what}`;
      if (!body)
        throw new GraphSyncError(`Microsoft Graph answered 404 for ${where} (the directory changed during the read, or a paging link expired); nothing was applied, the next run will try again`, 404);
      if (!Array.isArray(body.value)) throw new GraphSyncError(`Microsoft Graph sent ${where} without a value array; nothing was applied, the next run will try again`);
      out.push(...(body.value as T[]));
      const link: unknown = body["@odata.nextLink"];
      if (link !== undefined && link !== null && typeof link !== "string") throw new GraphSyncError(`Microsoft Graph sent a malformed @odata.nextLink for ${where}; nothing was applied`);
      next = typeof link === "string" ? link : undefined;
    }
    return out;
  }

  async snapshot(): Promise<GraphSnapshot> {
    await this.signIn();
    const appId = this.#o.appId;
    const sp = await this.get<{ id: string; appId: string; appRoles?: GraphSnapshot["appRoles"] }>(
      `/v1.0/servicePrincipals(appId='${encodeURIComponent(appId)}')?$select=id,appId,appRoles`,
      PERMISSIONS.application,
    );
    if (!sp) {
      throw new GraphSyncError(
        `tenant ${this.#o.tenantId} has no service principal for app id ${appId}; check --app-id (the application whose app roles map to groups) and that it is added to the tenant`,
        404,
      );
    }
    const appRoles = (sp.appRoles ?? []).map((r) => ({ id: r.id, value: r.value ?? null, displayName: r.displayName ?? null, isEnabled: r.isEnabled !== false }));
    const assignments = await this.list<GraphAssignment>(`/v1.0/servicePrincipals/${encodeURIComponent(sp.id)}/appRoleAssignedTo?$top=999`, PERMISSIONS.application, "the app role assignments");
    const roles = mappedRoles(appRoles);
    const relevant = assignments.filter((a) => roles.has(a.appRoleId.toLowerCase()));

    const users: Record<string, GraphUser> = {};
    const groupMembers: Record<string, string[]> = {};
    const groupIds = [...new Set(relevant.filter((a) => a.principalType === "Group").map((a) => a.principalId))];
    await this.#each(groupIds, async (groupId) => {
      type Member = Partial<GraphUser> & { id: string; "@odata.type"?: string };
      const members = await this.list<Member>(`/v1.0/groups/${encodeURIComponent(groupId)}/members?$select=${USER_FIELDS}&$top=999`, PERMISSIONS.groupMembers, `the members of group ${groupId}`);
      // Nested groups, devices and service principals are not covered by a group assignment.
      const people = members.filter((m) => (m["@odata.type"] ?? "#microsoft.graph.user") === "#microsoft.graph.user");
      groupMembers[groupId] = people.map((m) => m.id);
      for (const m of people) users[m.id] = toUser(m);
    });
    const direct = [...new Set(relevant.filter((a) => a.principalType === "User").map((a) => a.principalId))].filter((id) => !users[id]);
    await this.#each(direct, async (id) => {
      const u = await this.get<GraphUser>(`/v1.0/users/${encodeURIComponent(id)}?$select=${USER_FIELDS}`, PERMISSIONS.users);
      // Assigned but unreadable: leaving the user out would remove their memberships.
      if (!u)
        throw new GraphSyncError(
          `Microsoft Graph answered 404 for user ${id}, who holds an app role assignment (the directory changed during the read); nothing was applied, the next run will try again`,
          404,
        );
      users[id] = toUser(u);
    });
    return {
      appRoles,
      assignments: assignments.map((a) => ({ appRoleId: a.appRoleId, principalId: a.principalId, principalType: a.principalType, principalDisplayName: a.principalDisplayName ?? null })),
      groupMembers,
      users,
    };
  }

  async #each<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
    let i = 0;
    const worker = async () => {
      while (i < items.length) await fn(items[i++]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.#o.concurrency, items.length) }, worker));
  }
}

function toUser(u: Partial<GraphUser> & { id: string }): GraphUser {
  return { id: u.id, displayName: u.displayName ?? null, mail: u.mail ?? null, userPrincipalName: u.userPrincipalName ?? null, accountEnabled: u.accountEnabled ?? null };
}
