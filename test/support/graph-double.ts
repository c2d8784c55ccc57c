// A stand-in for Entra ID's token endpoint and the Microsoft Graph routes directory sync
// reads, over HTTPS with the throwaway test CA (tls.ts). Real paths and JSON shapes:
//   POST /{tenant}/oauth2/v2.0/token                                   client credentials
//   GET  /v1.0/servicePrincipals(appId='{appId}')?$select=id,appId,appRoles
//   GET  /v1.0/servicePrincipals/{id}/appRoleAssignedTo                OData pages
//   GET  /v1.0/groups/{id}/members?$select=…                           OData pages
//   GET  /v1.0/users/{id}?$select=…
// State is plain and mutable so tests add and remove roles, assignments, members and
// disable accounts between runs. On demand: 429 with Retry-After, 403 for a permission, and
// any status for chosen requests (a page that vanished, a server error: `fail`).
import { randomUUID } from "node:crypto";
import { type TestTls, testTls } from "./tls.ts";

export type DoubleUser = { id: string; displayName: string; mail: string | null; userPrincipalName: string; accountEnabled: boolean };
export type DoubleRole = { id: string; value: string | null; displayName: string; isEnabled: boolean; description?: string };
export type DoubleAssignment = { id: string; appRoleId: string; principalId: string; principalType: "User" | "Group" | "ServicePrincipal"; principalDisplayName: string };
export type DoubleGroup = { id: string; displayName: string; members: string[] };

export type GraphRequest = { method: string; path: string; query: string; status: number; at: number };

/** Which Graph requests a scripted failure hits: the decoded path and the raw query. */
export type FailureMatch = (request: { path: string; query: URLSearchParams }) => boolean;

export const PERMISSION_OF_ROUTE = {
  servicePrincipal: "Application.Read.All",
  assignments: "Application.Read.All",
  members: "GroupMember.Read.All",
  users: "User.Read.All",
} as const;

export class GraphDouble {
  readonly tenantId = randomUUID();
  readonly clientId = randomUUID();
  readonly appId = randomUUID();
  readonly servicePrincipalId = randomUUID();
  clientSecret = `secret~${randomUUID()}`;
  roles: DoubleRole[] = [];
  assignments: DoubleAssignment[] = [];
  users = new Map<string, DoubleUser>();
  groups = new Map<string, DoubleGroup>();
  /** Items per OData page. */
  pageSize = 100;
  /** Permissions the app lacks: routes needing one of them answer 403. */
  missingPermissions = new Set<string>();
  requests: GraphRequest[] = [];
  readonly tls: TestTls;
  #throttle: { remaining: number; retryAfter: number } = { remaining: 0, retryAfter: 0 };
  #failures: Array<{ match: FailureMatch; status: number; remaining: number; body?: unknown }> = [];
  #tokens = new Set<string>();
  #server: ReturnType<typeof Bun.serve>;

  constructor() {
    this.tls = testTls();
    this.#server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: this.tls.cert, key: this.tls.key }, fetch: async (req) => this.#handle(req) });
  }

  /** The base URL of both the authority and Graph. */
  get url(): string {
    return `https://127.0.0.1:${this.#server.port}`;
  }

  stop(): void {
    void this.#server.stop(true);
  }

  // ── state helpers ──────────────────────────────────────────────────────────────────

  addRole(value: string | null, over: Partial<DoubleRole> = {}): DoubleRole {
    const role = { id: randomUUID(), value, displayName: value ?? "role", isEnabled: true, ...over };
    this.roles.push(role);
    return role;
  }

  /** Removes a role from the app, and its assignments (Entra refuses to delete an assigned role; admins unassign first). */
  removeRole(id: string): void {
    this.roles = this.roles.filter((r) => r.id !== id);
    this.assignments = this.assignments.filter((a) => a.appRoleId !== id);
  }

  addUser(name: string, over: Partial<DoubleUser> = {}): DoubleUser {
    const user = { id: randomUUID(), displayName: name, mail: `${name.toLowerCase()}@example.com`, userPrincipalName: `${name.toLowerCase()}@contoso.onmicrosoft.com`, accountEnabled: true, ...over };
    this.users.set(user.id, user);
    return user;
  }

  addGroup(name: string, members: string[]): DoubleGroup {
    const group = { id: randomUUID(), displayName: name, members };
    this.groups.set(group.id, group);
    return group;
  }

  assign(roleId: string, principal: DoubleUser | DoubleGroup, type: "User" | "Group" = "mail" in principal ? "User" : "Group"): DoubleAssignment {
    const a = { id: randomUUID(), appRoleId: roleId, principalId: principal.id, principalType: type, principalDisplayName: principal.displayName };
    this.assignments.push(a);
    return a;
  }

  unassign(roleId: string, principalId: string): void {
    this.assignments = this.assignments.filter((a) => !(a.appRoleId === roleId && a.principalId === principalId));
  }

  /** The next `count` Graph requests answer 429 with `Retry-After: retryAfter`. */
  throttle(count: number, retryAfterSeconds: number): void {
    this.#throttle = { remaining: count, retryAfter: retryAfterSeconds };
  }

  /**
   * Graph requests matching `match` answer `status` (a Graph error body, or `body` as JSON with
   * status 200 to send a malformed page), `count` times (default: until `clearFailures`).
   */
  fail(match: FailureMatch, status: number, o: { count?: number; body?: unknown } = {}): void {
    this.#failures.push({ match, status, remaining: o.count ?? Number.POSITIVE_INFINITY, ...(o.body !== undefined ? { body: o.body } : {}) });
  }

  clearFailures(): void {
    this.#failures = [];
  }

  /** Forgets every issued token: the next Graph call gets 401 until a new sign-in. */
  expireTokens(): void {
    this.#tokens.clear();
  }

  // ── HTTP ───────────────────────────────────────────────────────────────────────────

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const path = decodeURIComponent(url.pathname);
    const at = Date.now();
    const res = await this.#route(req, url, path);
    this.requests.push({ method: req.method, path, query: url.search, status: res.status, at });
    return res;
  }

  async #route(req: Request, url: URL, path: string): Promise<Response> {
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (token && req.method === "POST") return this.#token(token[1]!, new URLSearchParams(await req.text()));

    if (!path.startsWith("/v1.0/")) return graphError(404, "Request_ResourceNotFound", `no route ${path}`);
    const auth = req.headers.get("authorization") ?? "";
    if (!auth.startsWith("Bearer ") || !this.#tokens.has(auth.slice(7))) {
      return graphError(401, "InvalidAuthenticationToken", "Access token is empty or invalid.");
    }
    if (this.#throttle.remaining > 0) {
      this.#throttle.remaining--;
      return graphError(429, "TooManyRequests", "Too many requests.", { "retry-after": String(this.#throttle.retryAfter) });
    }
    const failure = this.#failures.find((f) => f.remaining > 0 && f.match({ path, query: url.searchParams }));
    if (failure) {
      failure.remaining--;
      if (failure.body !== undefined) return json(failure.body, failure.status);
      return failure.status === 404
        ? graphError(404, "Request_ResourceNotFound", `Resource '${path}' does not exist or one of its queried reference-property objects are not present.`)
        : graphError(failure.status, "UnknownError", "Scripted failure.");
    }
    const select = url.searchParams.get("$select")?.split(",");
    const skip = Number(url.searchParams.get("$skiptoken") ?? 0);

    const sp = /^\/v1\.0\/servicePrincipals\(appId='([^']+)'\)$/.exec(path);
    if (sp) {
      if (this.#denied("servicePrincipal")) return forbidden();
      if (sp[1] !== this.appId) return graphError(404, "Request_ResourceNotFound", `Resource '${sp[1]}' does not exist or one of its queried reference-property objects are not present.`);
      return json(
        pick(
          {
            "@odata.context": `${this.url}/v1.0/$metadata#servicePrincipals/$entity`,
            id: this.servicePrincipalId,
            appId: this.appId,
            displayName: "Chat",
            appRoles: this.roles.map((r) => ({ allowedMemberTypes: ["User"], description: r.description ?? r.displayName, origin: "Application", ...r })),
          },
          select,
        ),
      );
    }
    const assigned = /^\/v1\.0\/servicePrincipals\/([^/]+)\/appRoleAssignedTo$/.exec(path);
    if (assigned) {
      if (this.#denied("assignments")) return forbidden();
      if (assigned[1] !== this.servicePrincipalId) return graphError(404, "Request_ResourceNotFound", `Resource '${assigned[1]}' does not exist.`);
      const items = this.assignments.map((a) => ({
        id: a.id,
        deletedDateTime: null,
        appRoleId: a.appRoleId,
        createdDateTime: "2024-01-01T00:00:00Z",
        principalDisplayName: a.principalDisplayName,
        principalId: a.principalId,
        principalType: a.principalType,
        resourceDisplayName: "Chat",
        resourceId: this.servicePrincipalId,
      }));
      return this.#page(url, items, skip, "#servicePrincipals('…')/appRoleAssignedTo");
    }
    const members = /^\/v1\.0\/groups\/([^/]+)\/members$/.exec(path);
    if (members) {
      if (this.#denied("members")) return forbidden();
      const group = this.groups.get(members[1]!);
      if (!group) return graphError(404, "Request_ResourceNotFound", `Resource '${members[1]}' does not exist.`);
      const items = group.members.map((id) => {
        const u = this.users.get(id);
        if (u) return { "@odata.type": "#microsoft.graph.user", ...pick(u, select) };
        const g = this.groups.get(id);
        return { "@odata.type": "#microsoft.graph.group", id, displayName: g?.displayName ?? null };
      });
      return this.#page(url, items, skip, "#directoryObjects");
    }
    const user = /^\/v1\.0\/users\/([^/]+)$/.exec(path);
    if (user) {
      if (this.#denied("users")) return forbidden();
      const u = this.users.get(user[1]!);
      if (!u) return graphError(404, "Request_ResourceNotFound", `Resource '${user[1]}' does not exist or one of its queried reference-property objects are not present.`);
      return json({ "@odata.context": `${this.url}/v1.0/$metadata#users/$entity`, ...pick(u, select) });
    }
    return graphError(400, "BadRequest", `Resource not found for the segment '${path.split("/")[2]}'.`);
  }

  #denied(route: keyof typeof PERMISSION_OF_ROUTE): boolean {
    return this.missingPermissions.has(PERMISSION_OF_ROUTE[route]);
  }

  #page(url: URL, items: unknown[], skip: number, context: string): Response {
    const value = items.slice(skip, skip + this.pageSize);
    const body: Record<string, unknown> = { "@odata.context": `${this.url}/v1.0/$metadata${context}`, value };
    if (skip + this.pageSize < items.length) {
      const next = new URL(url);
      next.searchParams.set("$skiptoken", String(skip + this.pageSize));
      body["@odata.nextLink"] = `${this.url}${next.pathname}${next.search}`;
    }
    return json(body);
  }

  #token(tenant: string, form: URLSearchParams): Response {
    const aad = (status: number, error: string, code: string, description: string) =>
      json(
        {
          error,
          error_description: `${code}: ${description}\r\nTrace ID: ${randomUUID()}\r\nCorrelation ID: ${randomUUID()}\r\nTimestamp: 2024-01-01 00:00:00Z`,
          error_codes: [Number(code.slice(6))],
          timestamp: "2024-01-01 00:00:00Z",
          trace_id: randomUUID(),
          correlation_id: randomUUID(),
        },
        status,
      );
    if (tenant !== this.tenantId) return aad(400, "invalid_request", "AADSTS90002", `Tenant '${tenant}' not found.`);
    if (form.get("grant_type") !== "client_credentials") return aad(400, "unsupported_grant_type", "AADSTS70003", "The app requested an unsupported grant type.");
    if (form.get("scope") !== `${this.url}/.default`) return aad(400, "invalid_scope", "AADSTS1002012", `The provided value for scope ${form.get("scope")} is not valid.`);
    if (form.get("client_id") !== this.clientId)
      return aad(400, "unauthorized_client", "AADSTS700016", `Application with identifier '${form.get("client_id")}' was not found in the directory '${tenant}'.`);
    if (form.get("client_secret") !== this.clientSecret)
      return aad(
        400,
        "invalid_client",
        "AADSTS7000215",
        `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${this.clientId}'.`,
      );
    const accessToken = `eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.${randomUUID()}.`;
    this.#tokens.add(accessToken);
    return json({ token_type: "Bearer", expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
  }
}

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; odata.metadata=minimal", ...headers } });
}

function graphError(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return json({ error: { code, message, innerError: { date: "2024-01-01T00:00:00", "request-id": randomUUID(), "client-request-id": randomUUID() } } }, status, headers);
}

function forbidden(): Response {
  return graphError(403, "Authorization_RequestDenied", "Insufficient privileges to complete the operation.");
}

function pick<T extends Record<string, unknown>>(obj: T, select: string[] | undefined): Partial<T> {
  if (!select) return obj;
  return Object.fromEntries(Object.entries(obj).filter(([k]) => select.includes(k) || k.startsWith("@odata"))) as Partial<T>;
}
