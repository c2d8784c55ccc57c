// What other folders may read of the tool servers (their one read interface, issue 36): a row by
// id, and the names of a set of ids. Imports nothing but the tables, so a folder that
// tool-servers/service.ts itself calls (tool-oauth/) can read servers without a cycle.
import { eq, inArray } from "drizzle-orm";
import { type Db, type Tables, tables } from "../db/index.ts";

export type ToolServerRow = Tables["toolServers"]["$inferSelect"];

/** The server with this id, or null when it was deleted. */
export async function toolServerById(db: Db, id: string): Promise<ToolServerRow | null> {
  const s = tables(db).toolServers;
  const [row] = await db.select().from(s).where(eq(s.id, id));
  return row ?? null;
}

/** Server id → name, for the ids given (deleted ones absent). */
export async function toolServerNames(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const s = tables(db).toolServers;
  const rows = await db
    .select({ id: s.id, name: s.name })
    .from(s)
    .where(inArray(s.id, [...new Set(ids)]));
  return new Map(rows.map((r) => [r.id, r.name]));
}
