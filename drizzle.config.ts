// drizzle-kit config for the SQLite migrations (`bunx drizzle-kit generate`); drizzle.pg.config.ts
// is the PostgreSQL one. Both read the same declarations (src/controlplane/*/tables.ts through
// db/schema.ts): here each table() then returns its SQLite table (db/table.ts).
import type { Config } from "drizzle-kit";
import { declareSqliteForDrizzleKit } from "./src/controlplane/db/table.ts";

declareSqliteForDrizzleKit();

export default {
  schema: "./src/controlplane/db/schema.ts",
  out: "./src/controlplane/db/migrations",
  dialect: "sqlite",
} satisfies Config;
