ALTER TABLE "policies" ADD COLUMN "condition" text;--> statement-breakpoint
ALTER TABLE "policies" ADD COLUMN "mode" text DEFAULT 'enforce' NOT NULL;