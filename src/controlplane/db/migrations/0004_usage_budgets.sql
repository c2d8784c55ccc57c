CREATE TABLE `budgets` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`scope` text NOT NULL,
	`scope_id` text NOT NULL,
	`period` text NOT NULL,
	`unit` text NOT NULL,
	`limit` real NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `budgets_org_name` ON `budgets` (`org_id`,`name`);--> statement-breakpoint
ALTER TABLE `audit_records` ADD `prompt_tokens` integer;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `completion_tokens` integer;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `cost` real;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `duration_ms` integer;--> statement-breakpoint
CREATE INDEX `audit_org_kind_ts` ON `audit_records` (`org_id`,`kind`,`ts`);--> statement-breakpoint
ALTER TABLE `model_profiles` ADD `prices` text;