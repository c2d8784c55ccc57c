CREATE TABLE `idp_subjects` (
	`account_id` text NOT NULL,
	`issuer` text NOT NULL,
	`subject` text NOT NULL,
	`org_id` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `issuer`, `subject`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `idp_subjects_subject` ON `idp_subjects` (`issuer`,`subject`);--> statement-breakpoint
CREATE TABLE `membership_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`role` text NOT NULL,
	`previous_role` text,
	`by_account_id` text,
	`at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`by_account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `membership_grants_account` ON `membership_grants` (`account_id`,`at`);--> statement-breakpoint
CREATE TABLE `audit_recovery_policies` (
	`org_id` text PRIMARY KEY NOT NULL,
	`approver_min_age_hours` integer NOT NULL,
	`previous_min_age_hours` integer NOT NULL,
	`changed_at` integer NOT NULL,
	`changed_by` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`changed_by`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `admin_notice_dismissals` (
	`notice_id` text NOT NULL,
	`account_id` text NOT NULL,
	`dismissed_at` integer NOT NULL,
	PRIMARY KEY(`notice_id`, `account_id`),
	FOREIGN KEY (`notice_id`) REFERENCES `admin_notices`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `admin_notices` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`action` text NOT NULL,
	`result` text NOT NULL,
	`actor_account_id` text NOT NULL,
	`text` text NOT NULL,
	`ref` text,
	`event_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`actor_account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `admin_notices_org_id` ON `admin_notices` (`org_id`,`id`);--> statement-breakpoint
ALTER TABLE `api_tokens` ADD `authenticated_at` integer;--> statement-breakpoint
ALTER TABLE `api_tokens` ADD `idp` text;--> statement-breakpoint
ALTER TABLE `login_requests` ADD `approver_authenticated_at` integer;--> statement-breakpoint
ALTER TABLE `login_requests` ADD `approver_idp` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `authenticated_at` integer;--> statement-breakpoint
ALTER TABLE `sessions` ADD `idp` text;--> statement-breakpoint
-- Memberships from before grants were kept: their grantor is unknown (docs/audit.md "Escrow recovery").
INSERT INTO `membership_grants` (`id`, `org_id`, `account_id`, `kind`, `role`, `previous_role`, `by_account_id`, `at`) SELECT 'mgr_unknown_' || `org_id` || '_' || `account_id`, `org_id`, `account_id`, 'unknown', `role`, NULL, NULL, `created_at` FROM `memberships`;