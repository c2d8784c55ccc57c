// TypeBox checks for the proxy. TypeBox knows no string formats until they are registered;
// the contract uses "date-time", so register it (once per process) before any check.
import type { TSchema, Static } from "@sinclair/typebox";
import { FormatRegistry } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
if (!FormatRegistry.Has("date-time")) FormatRegistry.Set("date-time", (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));

export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return Value.Check(schema, value);
}

/** The first validation problem as "path: message", or null when the value matches. */
export function firstProblem(schema: TSchema, value: unknown): string | null {
  // Check is compiled-fast; walking Errors costs several times more, so only on failure.
  if (Value.Check(schema, value)) return null;
  const e = Value.Errors(schema, value).First();
  return e ? `${e.path || "/"}: ${e.message}` : null;
}
