// The control plane's schema: every resource folder's tables.ts, gathered. Each table is declared
// once with db/table.ts and gives both the PostgreSQL tables exported here and their SQLite twins
// (`sqliteSchemaOf`). Times are epoch milliseconds; JSON columns hold small lists. A folder owns
// its tables and is the only code that queries them; others call its service functions.
export * from "../agents/tables.ts";
export * from "../assertion-keys/tables.ts";
export * from "../audit/tables.ts";
export * from "../audit-chain/tables.ts";
export * from "../audit-keys/tables.ts";
export * from "../auth/tables.ts";
export * from "../budgets/tables.ts";
export * from "../claims/tables.ts";
export * from "../console/tables.ts";
export * from "../directory/tables.ts";
export * from "../directory-sync/tables.ts";
export * from "../escrow/tables.ts";
export * from "../http/tables.ts";
export * from "../installations/tables.ts";
export * from "../invites/tables.ts";
export * from "../model-profiles/tables.ts";
export * from "../notices/tables.ts";
export * from "../organizations/tables.ts";
export * from "../policies/tables.ts";
export * from "../replicas/tables.ts";
export * from "../sinks/tables.ts";
export * from "../tool-oauth/tables.ts";
export * from "../tool-servers/tables.ts";
export * from "../tools/tables.ts";
