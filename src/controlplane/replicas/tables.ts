// The control plane's own replicas (issue 29): each process registers when it starts and says
// it is alive every half minute, with its release, the schema it knows and the policy features
// it can express. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";

export const controlplaneReplicas = table("controlplane_replicas", (c) => ({
  /** `cpr_…`, new for each process */
  id: c.text("id").primaryKey(),
  /** BUILD_VERSION of the release (`0.2.0+<commit>`) */
  version: c.text("version").notNull(),
  /** the last migration this release knows */
  schema: c.text("schema").notNull(),
  /** the policy features this release can put in a bundle (replicas/features.ts) */
  policyFeatures: c.json<string[]>("policy_features").notNull(),
  hostname: c.text("hostname").notNull(),
  startedAt: c.millis("started_at").notNull(),
  lastSeenAt: c.millis("last_seen_at").notNull(),
}));
