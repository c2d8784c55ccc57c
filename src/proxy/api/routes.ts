// What every local-API route module shares: the route shape, the dependencies the daemon hands
// in, and the answers more than one route gives. A new feature (MCP gateway, budgets) adds a
// module exporting `xRoutes(ctx): Route[]` and one line in local-api.ts.
import type { Tracing } from "../../tracing/index.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import type { Logger } from "../../log/index.ts";
import type { CredentialSync } from "../link/credential-sync.ts";
import type { Pipeline } from "../pipeline/pipeline.ts";
import type { ProxyStatus } from "../policy/status.ts";
import type { BodyResult } from "./json-body.ts";
import { openAIError } from "./model-forward.ts";

/** A route gets the request and the front-end user of its x-svc-user-* headers, read once. */
export type RouteHandler = (req: Request, user: FrontendUser | null) => Promise<Response>;

export type Route = {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  handler: RouteHandler;
  /** Answered without the runtime token (only /readyz). */
  public?: boolean;
  /** The most the route reads of a body (json-body.ts); an answer given without reading it discards that much first. 1 MiB when absent. */
  bodyLimit?: number;
  /** The supervisor's alone: the front end's credential of the boot (SVC_FRONTEND_TOKEN) gets 403. */
  runtimeTokenOnly?: boolean;
};

/** What the route modules use; built once by createLocalApi from LocalApiDeps. */
export type RouteContext = {
  status: ProxyStatus;
  /** The governed-call pipeline (../pipeline/): the decide routes and the chat route are adapters over it. */
  pipeline: Pipeline;
  credentials: Pick<CredentialSync, "unseal">;
  modelCa: string[] | null;
  spoolDepth: () => number;
  log: Logger;
  fetchImpl?: typeof fetch;
  /** The clock policy conditions see as `now`. */
  now: () => Date;
  /** OpenTelemetry traces (../tracing.ts): NO_TRACING when off. */
  tracing: Tracing;
};

/** No usable bundle (starting, refused credential, unavailable): 503, the reason named. */
export function unavailable(status: ProxyStatus): Response {
  return openAIError(503, `governance unavailable: ${status.readiness().reason ?? status.state}`, "unavailable", "governance_unavailable");
}

/** A body the client got wrong (malformed JSON, too large, too deep): 400/413 in OpenAI format. */
export function badBody(r: Extract<BodyResult, { ok: false }>): Response {
  return openAIError(r.status, r.message, "invalid_request_error", r.code);
}
