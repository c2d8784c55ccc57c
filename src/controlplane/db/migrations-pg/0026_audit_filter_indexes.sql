-- The per-hour roll-ups (audit/rollups.ts), filled by a later migration (audit_rollups_fill) once rows stored by older replicas can be told apart.
CREATE TABLE "audit_hourly_calls" (
	"org_id" text NOT NULL,
	"hour" bigint NOT NULL,
	"kind" text NOT NULL,
	"decision" text NOT NULL,
	"tool_name" text NOT NULL,
	"user_id" text NOT NULL,
	"calls" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_hourly_usage" (
	"org_id" text NOT NULL,
	"hour" bigint NOT NULL,
	"user_id" text NOT NULL,
	"model" text NOT NULL,
	"agent_id" text NOT NULL,
	"replica_id" text NOT NULL,
	"calls" integer NOT NULL,
	"prompt_tokens" double precision NOT NULL,
	"completion_tokens" double precision NOT NULL,
	"cost" double precision NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "audit_hourly_calls_key" ON "audit_hourly_calls" USING btree ("org_id","hour","kind","decision","tool_name","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "audit_hourly_usage_key" ON "audit_hourly_usage" USING btree ("org_id","hour","user_id","model","agent_id","replica_id");--> statement-breakpoint
CREATE INDEX "audit_org_kind_id" ON "audit_records" USING btree ("org_id","kind","id");--> statement-breakpoint
CREATE INDEX "audit_org_decision_id" ON "audit_records" USING btree ("org_id","decision","id");--> statement-breakpoint
CREATE INDEX "audit_org_task_id" ON "audit_records" USING btree ("org_id","id") WHERE "audit_records"."task" is not null;--> statement-breakpoint
CREATE INDEX "audit_org_task_decision_id" ON "audit_records" USING btree ("org_id","decision","id") WHERE "audit_records"."task" is not null;--> statement-breakpoint
CREATE INDEX "audit_org_shadow_id" ON "audit_records" USING btree ("org_id","id") WHERE "audit_records"."shadow_decision" is not null;
