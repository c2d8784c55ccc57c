// TypeBox checks for the proxy, with the contract's string formats registered. Each schema is
// compiled once (TypeCompiler) on its first use: the interpreted Value.Check walked the schema
// on every decision.
import type { Static, TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import "../contract/formats.ts";

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** The compiled check of a schema, compiled on first use. */
export function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c as TypeCheck<T>;
}

export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checker(schema).Check(value);
}

/** The first validation problem as "path: message", or null when the value matches. */
export function firstProblem(schema: TSchema, value: unknown): string | null {
  const c = checker(schema);
  // Walking the errors costs several times more than the check, so only on failure.
  if (c.Check(value)) return null;
  const e = c.Errors(value).First();
  return e ? `${e.path || "/"}: ${e.message}` : null;
}
