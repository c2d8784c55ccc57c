CREATE TABLE "audit_chain_flags" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"chain_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"kind" text NOT NULL,
	"record_id" text NOT NULL,
	"seq" integer NOT NULL,
	"detail" text NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_chain_heads" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"chain_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"replica_id" text,
	"seq" integer NOT NULL,
	"hash" text NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_checkpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"number" integer NOT NULL,
	"at" bigint NOT NULL,
	"body" text NOT NULL,
	"signature" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_signing_keys" (
	"org_id" text PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"wrapped_private_key" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "chain_id" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "chain_seq" integer;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "chain_prev" text;--> statement-breakpoint
ALTER TABLE "audit_checkpoints" ADD CONSTRAINT "audit_checkpoints_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_signing_keys" ADD CONSTRAINT "audit_signing_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_chain_flags_org_id" ON "audit_chain_flags" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "audit_chain_heads_org" ON "audit_chain_heads" USING btree ("org_id","chain_id");--> statement-breakpoint
CREATE UNIQUE INDEX "audit_checkpoints_org_number" ON "audit_checkpoints" USING btree ("org_id","number");