CREATE TABLE "audit_adoption" (
	"org_id" text PRIMARY KEY NOT NULL,
	"started_at" bigint NOT NULL,
	"adopted" integer DEFAULT 0 NOT NULL,
	"completed_at" bigint
);
--> statement-breakpoint
CREATE TABLE "audit_store_gaps" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"chain" text NOT NULL,
	"from_seq" integer NOT NULL,
	"to_seq" integer NOT NULL,
	"prev" text,
	"hash" text NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_verifications" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"state" text NOT NULL,
	"records" integer DEFAULT 0 NOT NULL,
	"checkpoint" integer,
	"problems" integer DEFAULT 0 NOT NULL,
	"detail" text
);
--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "store_chain" text;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "store_seq" integer;--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "store_prev" text;--> statement-breakpoint
ALTER TABLE "siem_sinks" ADD COLUMN "cursor_store_seq" integer;--> statement-breakpoint
ALTER TABLE "siem_sinks" ADD COLUMN "cursor_admin_seq" integer;--> statement-breakpoint
CREATE INDEX "audit_store_gaps_org_chain" ON "audit_store_gaps" USING btree ("org_id","chain","from_seq");--> statement-breakpoint
CREATE INDEX "audit_verifications_org" ON "audit_verifications" USING btree ("org_id","started_at");--> statement-breakpoint
CREATE INDEX "audit_org_store_chain_seq" ON "audit_records" USING btree ("org_id","store_chain","store_seq");--> statement-breakpoint
-- Organizations with rows stored before the store chains: their rows are adopted in the background (audit/adoption.ts).
INSERT INTO "audit_adoption" ("org_id", "started_at", "adopted") SELECT "id", (extract(epoch from now()) * 1000)::bigint, 0 FROM "organizations" WHERE EXISTS (SELECT 1 FROM "audit_records" WHERE "audit_records"."org_id" = "organizations"."id");
