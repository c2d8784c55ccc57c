ALTER TABLE "audit_records" ADD COLUMN "actor_id" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "target" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "detail" text;--> statement-breakpoint
CREATE INDEX "audit_org_admin_id" ON "audit_records" USING btree ("org_id","id") WHERE "audit_records"."kind" = 'admin';--> statement-breakpoint
CREATE INDEX "audit_org_actor_id" ON "audit_records" USING btree ("org_id","actor_id","id") WHERE "audit_records"."actor_id" is not null;