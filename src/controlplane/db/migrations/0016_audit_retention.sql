CREATE TABLE `audit_chain_floors` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`chain_id` text NOT NULL,
	`seq` integer NOT NULL,
	`prev` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `organizations` ADD `audit_retention_days` integer;--> statement-breakpoint
CREATE INDEX `audit_org_chain_seq` ON `audit_records` (`org_id`,`chain_id`,`chain_seq`);