// The table of http/rate-limit.ts: abuse-limit windows. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";

/**
 * Abuse-limit counters (http/rate-limit.ts): one fixed window per (scope, key), shared by every
 * replica and kept across restarts. The key is a SHA-256 of the email or client IP, never the value.
 */
export const rateLimitWindows = table(
  "rate_limit_windows",
  (c) => ({
    scope: c.text("scope").notNull(),
    key: c.text("key").notNull(),
    windowStart: c.millis("window_start").notNull(),
    count: c.integer("count").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.scope, t.key] }), c.index("rate_limit_windows_start").on(t.scope, t.windowStart)],
);
