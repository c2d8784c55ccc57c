CREATE TABLE "assertion_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"private_wrapped" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"retired_at" bigint,
	"withdrawn_at" bigint
);
--> statement-breakpoint
ALTER TABLE "tool_servers" ADD COLUMN "assertion_header" text;--> statement-breakpoint
ALTER TABLE "tool_servers" ADD COLUMN "assertion_audience" text;--> statement-breakpoint
ALTER TABLE "assertion_keys" ADD CONSTRAINT "assertion_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "assertion_keys_org" ON "assertion_keys" USING btree ("org_id","id");