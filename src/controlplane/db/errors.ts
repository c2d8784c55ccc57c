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
