// TypeBox checks for the proxy, with the contract's string formats registered.
import type { TSchema, Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import "../contract/formats.ts";

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
