// Maps every error to RFC 9457 problem+json with svc's stable `code`, once, for the whole app.
import { Elysia } from "elysia";
import { PROBLEM_CONTENT_TYPE, type Problem, SvcError, problemType } from "../../contract/errors.ts";
import { requestTarget } from "../../contract/request-target.ts";
import { isStoreBusy } from "../db/errors.ts";

/** Seconds a client is told to wait after a 503 store_busy. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

type ValidationLike = { all?: Array<{ path?: string; message?: string; summary?: string }> };

export function problemResponse(problem: Problem): Response {
  const headers: Record<string, string> = { "content-type": PROBLEM_CONTENT_TYPE };
  const retryAfter = (problem as { retry_after_seconds?: unknown }).retry_after_seconds;
  if (problem.status === 503 && typeof retryAfter === "number") headers["retry-after"] = String(Math.ceil(retryAfter));
  return new Response(JSON.stringify(problem), { status: problem.status, headers });
}

export function toProblem(code: string, error: unknown, path: string): Problem {
  if (error instanceof SvcError) return error.toProblem(path);
  if (isStoreBusy(error)) {
    return {
      type: problemType("store_busy"),
      title: "store busy",
      status: 503,
      code: "store_busy",
      detail: `the control plane's database is busy; send the request again after ${BUSY_RETRY_AFTER_SECONDS} s`,
      instance: path,
      retry_after_seconds: BUSY_RETRY_AFTER_SECONDS,
    } as Problem;
  }
  // An answer that breaks its route's declared response schema is the server's fault (the
  // contract, src/contract/admin-api.ts, is wrong or the presenter is): 500, logged, never a 422.
  if (code === "VALIDATION" && (error as { type?: string }).type !== "response") {
    const all = (error as ValidationLike).all ?? [];
    const errors = all.map((e) => ({ path: e.path || "/", message: e.summary ?? e.message ?? "invalid" }));
    const first = errors[0];
    return {
      type: problemType("validation_failed"),
      title: "validation failed",
      status: 422,
      code: "validation_failed",
      detail: first ? `${first.path}: ${first.message}` : "the request body is invalid",
      instance: path,
      errors,
    };
  }
  if (code === "NOT_FOUND") {
    return { type: problemType("not_found"), title: "not found", status: 404, code: "not_found", detail: `no route ${path}`, instance: path };
  }
  if (code === "PARSE") {
    return { type: problemType("validation_failed"), title: "validation failed", status: 400, code: "validation_failed", detail: "the request body is not valid JSON", instance: path };
  }
  return { type: problemType("internal"), title: "internal error", status: 500, code: "internal", detail: "an internal error occurred; see the control plane log", instance: path };
}

export type ErrorLogger = (event: { path: string; code: string; error: unknown }) => void;

/** The answer to any error (`code`: Elysia's, or "UNKNOWN" outside it): its problem, a server fault logged. */
export function errorResponse(code: string, error: unknown, path: string, log: ErrorLogger): Response {
  const problem = toProblem(code, error, path);
  if (problem.status >= 500) log({ path, code, error });
  return problemResponse(problem);
}

export function problemPlugin(log: ErrorLogger = () => {}) {
  return new Elysia({ name: "problem" }).onError({ as: "global" }, ({ code, error, request }) => errorResponse(String(code), error, requestTarget(request.url).path, log));
}
