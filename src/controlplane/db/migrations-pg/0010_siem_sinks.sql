CREATE TABLE "siem_sinks" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"endpoint" text NOT NULL,
	"options" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"wrapped_secret" text,
	"include_ciphertext" boolean DEFAULT false NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"cursor_received_at" bigint NOT NULL,
	"cursor_id" text DEFAULT '' NOT NULL,
	"delivered" integer DEFAULT 0 NOT NULL,
	"last_success_at" bigint,
	"last_error_at" bigint,
	"last_error" text,
	"failures" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_until" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "siem_sinks" ADD CONSTRAINT "siem_sinks_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "siem_sinks_org_name" ON "siem_sinks" USING btree ("org_id","name");--> statement-breakpoint
CREATE INDEX "audit_org_received_id" ON "audit_records" USING btree ("org_id","received_at","id");