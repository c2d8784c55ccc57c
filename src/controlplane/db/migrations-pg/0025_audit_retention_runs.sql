CREATE TABLE "audit_retention_runs" (
	"org_id" text PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"state" text NOT NULL,
	"actor" text NOT NULL,
	"started_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint,
	"retention_days" integer,
	"cutoff" bigint,
	"deleted" integer DEFAULT 0 NOT NULL,
	"chains_cut" integer DEFAULT 0 NOT NULL,
	"checkpoint" integer,
	"detail" text
);
