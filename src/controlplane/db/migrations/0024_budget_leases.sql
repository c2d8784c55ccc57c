CREATE TABLE `budget_leases` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`budget_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`replica_id` text,
	`period_start` integer NOT NULL,
	`granted` real NOT NULL,
	`consumed` real DEFAULT 0 NOT NULL,
	`settled` integer DEFAULT false NOT NULL,
	`expires_at` integer NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `budget_leases_budget_period` ON `budget_leases` (`budget_id`,`period_start`);