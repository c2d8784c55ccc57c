CREATE TABLE "budget_leases" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"budget_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"replica_id" text,
	"period_start" bigint NOT NULL,
	"granted" double precision NOT NULL,
	"consumed" double precision DEFAULT 0 NOT NULL,
	"settled" boolean DEFAULT false NOT NULL,
	"expires_at" bigint NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "budget_leases" ADD CONSTRAINT "budget_leases_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "budget_leases_budget_period" ON "budget_leases" USING btree ("budget_id","period_start");