ALTER TABLE `audit_records` ADD `actor_id` text;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `target` text;--> statement-breakpoint
ALTER TABLE `audit_records` ADD `detail` text;--> statement-breakpoint
CREATE INDEX `audit_org_admin_id` ON `audit_records` (`org_id`,`id`) WHERE "audit_records"."kind" = 'admin';--> statement-breakpoint
CREATE INDEX `audit_org_actor_id` ON `audit_records` (`org_id`,`actor_id`,`id`) WHERE "audit_records"."actor_id" is not null;