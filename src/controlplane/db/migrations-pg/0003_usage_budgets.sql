CREATE TABLE "budgets" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"scope" text NOT NULL,
	"scope_id" text NOT NULL,
	"period" text NOT NULL,
	"unit" text NOT NULL,
	"limit" double precision NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "prompt_tokens" integer;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "completion_tokens" integer;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "cost" double precision;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "duration_ms" integer;--> statement-breakpoint
ALTER TABLE "model_profiles" ADD COLUMN "prices" jsonb;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "budgets_org_name" ON "budgets" USING btree ("org_id","name");--> statement-breakpoint
CREATE INDEX "audit_org_kind_ts" ON "audit_records" USING btree ("org_id","kind","ts");