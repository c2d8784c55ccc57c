ALTER TABLE "runtime_replicas" ADD COLUMN "spool_state" text;--> statement-breakpoint
ALTER TABLE "runtime_replicas" ADD COLUMN "spool_free_bytes" double precision;--> statement-breakpoint
ALTER TABLE "runtime_replicas" ADD COLUMN "clock_skew_ms" integer;