ALTER TABLE `audit_verifications` ADD `rollup_mismatches` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `audit_verifications` ADD `rollup_detail` text;