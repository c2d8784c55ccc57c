ALTER TABLE "audit_verifications" ADD COLUMN "rollup_mismatches" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "audit_verifications" ADD COLUMN "rollup_detail" text;