CREATE TABLE "audit_recovery_requests" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"record_id" text NOT NULL,
	"reason" text NOT NULL,
	"requested_by" text NOT NULL,
	"status" text NOT NULL,
	"approved_by" text,
	"approved_at" bigint,
	"consumed_at" bigint,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_recovery_requests" ADD CONSTRAINT "audit_recovery_requests_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_recovery_requests" ADD CONSTRAINT "audit_recovery_requests_requested_by_accounts_id_fk" FOREIGN KEY ("requested_by") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_recovery_requests" ADD CONSTRAINT "audit_recovery_requests_approved_by_accounts_id_fk" FOREIGN KEY ("approved_by") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_recovery_requests_org_id" ON "audit_recovery_requests" USING btree ("org_id","id");