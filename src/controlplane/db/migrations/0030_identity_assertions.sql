CREATE TABLE `assertion_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`public_jwk` text NOT NULL,
	`private_wrapped` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`retired_at` integer,
	`withdrawn_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `assertion_keys_org` ON `assertion_keys` (`org_id`,`id`);--> statement-breakpoint
ALTER TABLE `tool_servers` ADD `assertion_header` text;--> statement-breakpoint
ALTER TABLE `tool_servers` ADD `assertion_audience` text;