CREATE TABLE `siem_sinks` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`endpoint` text NOT NULL,
	`options` text DEFAULT '{}' NOT NULL,
	`wrapped_secret` text,
	`include_ciphertext` integer DEFAULT false NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`cursor_received_at` integer NOT NULL,
	`cursor_id` text DEFAULT '' NOT NULL,
	`delivered` integer DEFAULT 0 NOT NULL,
	`last_success_at` integer,
	`last_error_at` integer,
	`last_error` text,
	`failures` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer DEFAULT 0 NOT NULL,
	`lease_owner` text,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `siem_sinks_org_name` ON `siem_sinks` (`org_id`,`name`);--> statement-breakpoint
CREATE INDEX `audit_org_received_id` ON `audit_records` (`org_id`,`received_at`,`id`);