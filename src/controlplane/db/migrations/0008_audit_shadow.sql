ALTER TABLE `audit_records` ADD `shadow_decision` text;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `shadow_policy_id` text;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `shadow_reason` text;--> statement-breakpoint
CREATE INDEX `audit_org_policy_id` ON `audit_records` (`org_id`,`policy_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_org_shadow_policy_id` ON `audit_records` (`org_id`,`shadow_policy_id`,`id`);