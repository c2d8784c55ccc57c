-- SQLite is one replica (no older release writes meanwhile): no default, every stored row is counted by the fill below.
ALTER TABLE `audit_records` ADD `rollup_pending` integer;--> statement-breakpoint
CREATE INDEX `audit_org_rollup_pending_ts` ON `audit_records` (`org_id`,`ts`) WHERE "audit_records"."rollup_pending";--> statement-breakpoint
-- The roll-ups of the records already stored (audit/rollups.ts); from here on ingest and retention keep them, and rows an older replica stores meanwhile are pending until the fold counts them (audit/rollup-fold.ts). Emptied first: a store that ran an earlier build of the roll-ups' migration was filled once already. Written by hand.
DELETE FROM "audit_hourly_calls";--> statement-breakpoint
DELETE FROM "audit_hourly_usage";--> statement-breakpoint
INSERT INTO "audit_hourly_calls" ("org_id", "hour", "kind", "decision", "tool_name", "user_id", "calls")
SELECT "org_id", ("ts" / 3600000) * 3600000, "kind", "decision", coalesce("tool_name", ''), coalesce("user_id", ''), count(*)
FROM "audit_records" WHERE "kind" IN ('tool', 'model') AND "task" IS NULL AND "rollup_pending" IS NOT TRUE
GROUP BY 1, 2, 3, 4, 5, 6;--> statement-breakpoint
INSERT INTO "audit_hourly_usage" ("org_id", "hour", "user_id", "model", "agent_id", "replica_id", "calls", "prompt_tokens", "completion_tokens", "cost")
SELECT "org_id", ("ts" / 3600000) * 3600000, coalesce("user_id", ''), coalesce("model", ''), "agent_id", coalesce("replica_id", ''), count(*), coalesce(sum("prompt_tokens"), 0), coalesce(sum("completion_tokens"), 0), coalesce(sum("cost"), 0)
FROM "audit_records" WHERE "kind" = 'outcome' AND "action" = 'model:invoke' AND "rollup_pending" IS NOT TRUE
GROUP BY 1, 2, 3, 4, 5, 6;
