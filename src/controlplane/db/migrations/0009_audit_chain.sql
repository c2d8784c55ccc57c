CREATE TABLE `audit_chain_flags` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`chain_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`kind` text NOT NULL,
	`record_id` text NOT NULL,
	`seq` integer NOT NULL,
	`detail` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_chain_flags_org_id` ON `audit_chain_flags` (`org_id`,`id`);--> statement-breakpoint
CREATE TABLE `audit_chain_heads` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`chain_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`replica_id` text,
	`seq` integer NOT NULL,
	`hash` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_chain_heads_org` ON `audit_chain_heads` (`org_id`,`chain_id`);--> statement-breakpoint
CREATE TABLE `audit_checkpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`number` integer NOT NULL,
	`at` integer NOT NULL,
	`body` text NOT NULL,
	`signature` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_checkpoints_org_number` ON `audit_checkpoints` (`org_id`,`number`);--> statement-breakpoint
CREATE TABLE `audit_signing_keys` (
	`org_id` text PRIMARY KEY NOT NULL,
	`public_key` text NOT NULL,
	`wrapped_private_key` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `audit_records` ADD `chain_id` text;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `chain_seq` integer;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `chain_prev` text;