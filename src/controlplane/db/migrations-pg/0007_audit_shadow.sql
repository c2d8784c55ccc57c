ALTER TABLE "audit_records" ADD COLUMN "shadow_decision" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "shadow_policy_id" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "shadow_reason" text;--> statement-breakpoint
CREATE INDEX "audit_org_policy_id" ON "audit_records" USING btree ("org_id","policy_id","id");--> statement-breakpoint
CREATE INDEX "audit_org_shadow_policy_id" ON "audit_records" USING btree ("org_id","shadow_policy_id","id");