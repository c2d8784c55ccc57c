CREATE TABLE `audit_recovery_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`record_id` text NOT NULL,
	`reason` text NOT NULL,
	`requested_by` text NOT NULL,
	`status` text NOT NULL,
	`approved_by` text,
	`approved_at` integer,
	`consumed_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`requested_by`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`approved_by`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `audit_recovery_requests_org_id` ON `audit_recovery_requests` (`org_id`,`id`);