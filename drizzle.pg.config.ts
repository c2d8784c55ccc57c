// drizzle-kit config for the PostgreSQL migrations (`bunx drizzle-kit generate --config drizzle.pg.config.ts`);
// drizzle.config.ts is the SQLite one. Both read the same declarations (db/README.md).
import type { Config } from "drizzle-kit";

export default {
  schema: "./src/controlplane/db/schema.ts",
  out: "./src/controlplane/db/migrations-pg",
  dialect: "postgresql",
} satisfies Config;
