// drizzle-kit generates SQL migrations from the schema; the runtime migrator applies them.
import type { Config } from "drizzle-kit";

export default {
  schema: "./src/controlplane/db/schema.ts",
  out: "./src/controlplane/db/migrations",
  dialect: "sqlite",
} satisfies Config;
