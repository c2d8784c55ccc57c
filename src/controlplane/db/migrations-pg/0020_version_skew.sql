CREATE TABLE "controlplane_replicas" (
	"id" text PRIMARY KEY NOT NULL,
	"version" text NOT NULL,
	"schema" text NOT NULL,
	"policy_features" jsonb NOT NULL,
	"hostname" text NOT NULL,
	"started_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_tokens" ADD COLUMN "last_client" text;--> statement-breakpoint
ALTER TABLE "policies" ADD COLUMN "requires" jsonb DEFAULT '[]'::jsonb NOT NULL;