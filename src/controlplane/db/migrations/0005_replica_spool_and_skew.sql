ALTER TABLE `runtime_replicas` ADD `spool_state` text;--> statement-breakpoint
ALTER TABLE `runtime_replicas` ADD `spool_free_bytes` real;--> statement-breakpoint
ALTER TABLE `runtime_replicas` ADD `clock_skew_ms` integer;