// PostgreSQL migrations embedded in the binary (drizzle.pg.config.ts generates them). Add a
// line here for every migration drizzle-kit generates.
import { fromJournal } from "../embedded-migrations.ts";
import journal from "./meta/_journal.json" with { type: "json" };
import m0000 from "./0000_init.sql" with { type: "text" };
import m0001 from "./0001_sealed_recipients.sql" with { type: "text" };
import m0002 from "./0002_rate_limit_windows.sql" with { type: "text" };
import m0003 from "./0003_usage_budgets.sql" with { type: "text" };
import m0004 from "./0004_replica_spool_and_skew.sql" with { type: "text" };
import m0005 from "./0005_policy_condition_mode.sql" with { type: "text" };
import m0006 from "./0006_tool_servers.sql" with { type: "text" };
import m0007 from "./0007_audit_shadow.sql" with { type: "text" };
import m0008 from "./0008_audit_chain.sql" with { type: "text" };
import m0009 from "./0009_audit_key_disabled_reason.sql" with { type: "text" };
import m0010 from "./0010_siem_sinks.sql" with { type: "text" };
import m0011 from "./0011_audit_recovery_requests.sql" with { type: "text" };
import m0012 from "./0012_audit_task.sql" with { type: "text" };
import m0013 from "./0013_chat_invites.sql" with { type: "text" };
import m0014 from "./0014_audit_tool_server.sql" with { type: "text" };
import m0015 from "./0015_audit_retention.sql" with { type: "text" };
import m0016 from "./0016_audit_partial_indexes.sql" with { type: "text" };
import m0017 from "./0017_spool_indexing.sql" with { type: "text" };
import m0018 from "./0018_admin_trail.sql" with { type: "text" };
import m0019 from "./0019_two_person_rule.sql" with { type: "text" };
import m0020 from "./0020_version_skew.sql" with { type: "text" };
import m0021 from "./0021_audit_digest_index.sql" with { type: "text" };
import m0022 from "./0022_store_chains.sql" with { type: "text" };
import m0023 from "./0023_budget_leases.sql" with { type: "text" };
import m0024 from "./0024_audit_call_outcome.sql" with { type: "text" };
import m0025 from "./0025_audit_retention_runs.sql" with { type: "text" };
import m0026 from "./0026_audit_filter_indexes.sql" with { type: "text" };
import m0027 from "./0027_mcp_tool_catalogue.sql" with { type: "text" };
import m0028 from "./0028_tool_server_oauth.sql" with { type: "text" };
import m0029 from "./0029_identity_assertions.sql" with { type: "text" };
import m0030 from "./0030_audit_rollup_pending.sql" with { type: "text" };
import m0031 from "./0031_audit_rollups_fill.sql" with { type: "text" };
import m0032 from "./0032_audit_tool_bytewise.sql" with { type: "text" };
import m0033 from "./0033_audit_verification_rollups.sql" with { type: "text" };
import m0034 from "./0034_audit_unchained_index.sql" with { type: "text" };
import m0035 from "./0035_audit_verification_signature.sql" with { type: "text" };

export const MIGRATIONS = fromJournal(journal, {
  "0000_init": m0000,
  "0001_sealed_recipients": m0001,
  "0002_rate_limit_windows": m0002,
  "0003_usage_budgets": m0003,
  "0004_replica_spool_and_skew": m0004,
  "0005_policy_condition_mode": m0005,
  "0006_tool_servers": m0006,
  "0007_audit_shadow": m0007,
  "0008_audit_chain": m0008,
  "0009_audit_key_disabled_reason": m0009,
  "0010_siem_sinks": m0010,
  "0011_audit_recovery_requests": m0011,
  "0012_audit_task": m0012,
  "0013_chat_invites": m0013,
  "0014_audit_tool_server": m0014,
  "0015_audit_retention": m0015,
  "0016_audit_partial_indexes": m0016,
  "0017_spool_indexing": m0017,
  "0018_admin_trail": m0018,
  "0019_two_person_rule": m0019,
  "0020_version_skew": m0020,
  "0021_audit_digest_index": m0021,
  "0022_store_chains": m0022,
  "0023_budget_leases": m0023,
  "0024_audit_call_outcome": m0024,
  "0025_audit_retention_runs": m0025,
  "0026_audit_filter_indexes": m0026,
  "0027_mcp_tool_catalogue": m0027,
  "0028_tool_server_oauth": m0028,
  "0029_identity_assertions": m0029,
  "0030_audit_rollup_pending": m0030,
  "0031_audit_rollups_fill": m0031,
  "0032_audit_tool_bytewise": m0032,
  "0033_audit_verification_rollups": m0033,
  "0034_audit_unchained_index": m0034,
  "0035_audit_verification_signature": m0035,
});
