// The gate every HTTP request passes before the application sees it. It exists because Elysia
// reads and parses a body before any hook of the route runs (authentication included), so a
// body had to be read, whole, before the caller was known. Here, in order:
//   1. TRACE, CONNECT and unknown methods: 405, never routed.
//   2. The route's credential is checked first, from the headers alone (401/403/404 before any
//      validation, and without reading a byte of a body). Requests without a body (GET, HEAD,
//      OPTIONS, an empty DELETE) then go straight on.
//   3. A request with a body: the body is read with the route's limit counted while
//      reading (Content-Length over the limit: 413 at once; a chunked body is cut at the limit),
//      and its JSON nesting depth is bounded (400: deep JSON would exhaust the parser's stack);
//      a JSON-only route refuses a body of another media type (415).
//   4. The request goes on with the bytes read and the credential the gate resolved, so the
//      route's own authentication does not look it up again (credentialOf).
import { readBounded } from "../../contract/bounded-body.ts";
import { SvcError } from "../../contract/errors.ts";
import { requestTarget } from "../../contract/request-target.ts";
import { type ErrorLogger, errorResponse, problemResponse } from "./problem.ts";

/** Deeper JSON than this is refused with 400 before parsing; svc's own bodies nest under 10. */
export const MAX_JSON_DEPTH = 32;

/** The methods the control plane routes; anything else is 405. */
const ROUTED = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";

export type GateRoute = {
  /** The most bytes the body may have. */
  limit: number;
  /** Checks the caller's credential from the headers alone; throws SvcError when refused; returns what it resolved. */
  authenticate?: (request: Request) => Promise<unknown>;
  /** The route takes JSON bodies only: a non-empty body of another media type is 415. */
  jsonOnly?: boolean;
};

/** application/json, or a structured `+json` type, with or without parameters. */
export function isJsonMediaType(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

export type Gate = (request: Request, server?: { requestIP(r: Request): { address: string } | null } | null) => Promise<Response>;

const credentials = new WeakMap<Request, unknown>();
const peers = new WeakMap<Request, string>();
const origins = new WeakMap<Request, RequestOrigin>();
const received = new WeakMap<Request, Request>();

/** The request the gate received, for the copy it forwarded with the body read (itself otherwise). */
export function receivedRequest(request: Request): Request {
  return received.get(request) ?? request;
}

/** Where a request came from, as the admin trail names it: the client's address and user agent. */
export type RequestOrigin = { ip: string | null; userAgent: string | null };

/** The origin of work no request carried (tests, the CLI's own bootstrap). */
export const NO_ORIGIN: RequestOrigin = { ip: null, userAgent: null };

/**
 * An in-process caller (the console calling the admin API for a browser) hands the browser's
 * address and user agent to the request it makes. A WeakMap keyed by the Request object: only
 * code in this process can write it, never a header a client sends.
 */
export function carryOrigin(request: Request, origin: RequestOrigin): Request {
  origins.set(request, origin);
  return request;
}

/** The origin an in-process caller carried into this request, if any (carryOrigin). */
export function carriedOrigin(request: Request): RequestOrigin | undefined {
  return origins.get(request);
}

/** What the gate's authenticate resolved for this request (undefined: the gate did not check it). */
export function credentialOf(request: Request): unknown {
  return credentials.get(request);
}

/** The socket peer the gate saw for this request (the forwarded copy has no socket). */
export function peerOf(request: Request): string | undefined {
  return peers.get(request);
}

/**
 * The deepest nesting of arrays and objects in JSON text (strings skipped), stopping past `max`.
 * A string is skipped with the native `indexOf` to its closing quote (one preceded by an even
 * number of backslashes): an audit batch is mostly strings, and a byte-by-byte walk of its
 * ~350 KB cost as much as parsing it.
 */
export function jsonDepthExceeds(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === 0x22) {
      for (;;) {
        const quote = bytes.indexOf(0x22, i + 1);
        if (quote < 0) return false; // unterminated: the parser refuses it
        let b = quote - 1;
        while (bytes[b] === 0x5c) b--;
        i = quote;
        if ((quote - 1 - b) % 2 === 0) break; // not escaped: the string ends here
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

function tooLarge(limit: number): SvcError {
  return new SvcError("body_too_large", `the request body is larger than this route takes (${limit} bytes)`, { limit_bytes: limit });
}

/** API answers may carry secrets (tokens, sealed keys, audit data): no cache keeps them unless a route says otherwise. */
function noStore(response: Response): Response {
  try {
    if (!response.headers.has("cache-control")) response.headers.set("cache-control", "no-store");
  } catch {
    // immutable headers (a fetched response passed through): left as they are
  }
  return response;
}

export function requestGate(routeOf: (method: string, path: string) => GateRoute, next: (request: Request) => Promise<Response>, log: ErrorLogger = () => {}): Gate {
  const gate = gateOf(routeOf, next, log);
  return async (request, server) => noStore(await gate(request, server));
}

function gateOf(routeOf: (method: string, path: string) => GateRoute, next: (request: Request) => Promise<Response>, log: ErrorLogger): Gate {
  return async (request, server) => {
    // The path as new URL() gives it, without building one for the usual plain paths.
    const { path } = requestTarget(request.url);
    const peer = server?.requestIP(request)?.address;
    if (!ROUTED.has(request.method)) {
      const res = problemResponse(new SvcError("method_not_allowed", `${request.method} is not a method this service answers`).toProblem(path));
      res.headers.set("allow", ALLOW);
      return res;
    }
    const route = routeOf(request.method, path);
    // Known before authentication: a refusal is recorded with the address it came from.
    if (peer) peers.set(request, peer);
    try {
      let credential: unknown;
      if (route.authenticate) {
        credential = await route.authenticate(request);
        credentials.set(request, credential);
      }
      if (request.body === null || request.method === "GET" || request.method === "HEAD") return await next(request);
      const declared = Number(request.headers.get("content-length") ?? Number.NaN);
      if (declared > route.limit) throw tooLarge(route.limit);
      const bytes = await readBounded(request.body, route.limit);
      if (bytes === null) throw tooLarge(route.limit);
      if (route.jsonOnly && bytes.byteLength > 0 && !isJsonMediaType(request.headers.get("content-type"))) {
        throw new SvcError("unsupported_media_type", "this API takes JSON bodies: send content-type: application/json", {
          errors: [{ path: "/content-type", message: "must be application/json" }],
        });
      }
      if (jsonDepthExceeds(bytes, MAX_JSON_DEPTH)) {
        throw new SvcError("body_too_deep", `the request body nests deeper than ${MAX_JSON_DEPTH} levels`, { max_depth: MAX_JSON_DEPTH });
      }
      const forwarded = new Request(request.url, { method: request.method, headers: request.headers, body: bytes, signal: request.signal });
      if (route.authenticate) credentials.set(forwarded, credential);
      if (peer) peers.set(forwarded, peer);
      const origin = origins.get(request);
      if (origin) origins.set(forwarded, origin);
      received.set(forwarded, request);
      return await next(forwarded);
    } catch (e) {
      // Answered as the app answers errors (a refusal's problem; anything else, such as a store
      // failing while a credential is checked, the logged internal 500), never left to
      // Bun.serve, whose default page shows the stack.
      return errorResponse("UNKNOWN", e, path, log);
    }
  };
}
