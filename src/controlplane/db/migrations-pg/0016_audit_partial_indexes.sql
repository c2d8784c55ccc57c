DROP INDEX "audit_ref";--> statement-breakpoint
DROP INDEX "audit_org_kind_ts";--> statement-breakpoint
DROP INDEX "audit_org_policy_id";--> statement-breakpoint
DROP INDEX "audit_org_shadow_policy_id";--> statement-breakpoint
CREATE INDEX "audit_org_model_outcome_ts" ON "audit_records" USING btree ("org_id","ts") WHERE "audit_records"."kind" = 'outcome' and "audit_records"."action" = 'model:invoke';--> statement-breakpoint
CREATE INDEX "audit_org_policy_id" ON "audit_records" USING btree ("org_id","policy_id","id") WHERE "audit_records"."policy_id" is not null;--> statement-breakpoint
CREATE INDEX "audit_org_shadow_policy_id" ON "audit_records" USING btree ("org_id","shadow_policy_id","id") WHERE "audit_records"."shadow_policy_id" is not null;