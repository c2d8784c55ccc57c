// How a database error may be written to a log. drizzle's query errors carry the statement's
// parameters on their second line ("Failed query: …\nparams: …"): user data, digests,
// ciphertext. Only the first line of each message in the cause chain is kept, so a log shows
// the statement and the database's reason, never the values.

/** The first line of each message of the error and its causes (at most 4), joined by ": ". */
export function loggableError(e: unknown): string {
  const parts: string[] = [];
  for (let c: unknown = e, depth = 0; c && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const message = c instanceof Error ? c.message : typeof c === "string" ? c : "";
    const line = message.split("\n")[0]!;
    if (line && !parts.includes(line)) parts.push(line);
  }
  return parts.join(": ") || (e instanceof Error ? e.name : "error");
}

/** The SQLSTATE of a PostgreSQL error, looked for through drizzle's wrapping. */
export function sqlState(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    const errno = (c as { errno?: unknown }).errno;
    if (typeof errno === "string" && /^[0-9A-Z]{5}$/.test(errno)) return errno;
  }
  return undefined;
}

/**
 * PostgreSQL's answers that mean "too much at once, try again": serialization failures and
 * deadlocks left after the transaction's own retries (postgres.ts), a lock not granted within
 * lock_timeout, a statement cancelled at statement_timeout; SQLite's busy lock. A client gets
 * 503 with Retry-After for these (http/problem.ts), never 500: nothing is wrong with its request.
 */
const BUSY_STATES = new Set(["40001", "40P01", "55P03", "57014"]);
export function isStoreBusy(e: unknown): boolean {
  if (BUSY_STATES.has(sqlState(e) ?? "")) return true;
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    if ((c as { code?: unknown }).code === "SQLITE_BUSY") return true;
  }
  return false;
}
