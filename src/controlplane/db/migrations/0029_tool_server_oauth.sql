CREATE TABLE `tool_server_consents` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`server_id` text NOT NULL,
	`user_id` text,
	`link_hash` text NOT NULL,
	`link_wrapped` text NOT NULL,
	`state_hash` text,
	`verifier_wrapped` text,
	`opened_at` integer,
	`used_at` integer,
	`expires_at` integer NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `tool_servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tool_server_consents_link` ON `tool_server_consents` (`link_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `tool_server_consents_state` ON `tool_server_consents` (`state_hash`);--> statement-breakpoint
CREATE INDEX `tool_server_consents_server` ON `tool_server_consents` (`server_id`);--> statement-breakpoint
CREATE TABLE `tool_server_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`server_id` text NOT NULL,
	`user_id` text,
	`subject` text,
	`access_wrapped` text NOT NULL,
	`refresh_wrapped` text,
	`expires_at` integer,
	`scope` text,
	`refreshing_until` integer,
	`refreshed_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `tool_servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tool_server_grants_server_user` ON `tool_server_grants` (`server_id`,`user_id`);--> statement-breakpoint
CREATE TABLE `tool_server_oauth` (
	`server_id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`issuer` text,
	`metadata` text,
	`resource` text,
	`scope` text,
	`registration` text,
	`client_id` text,
	`client_secret_wrapped` text,
	`redirect_uri` text,
	FOREIGN KEY (`server_id`) REFERENCES `tool_servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `audit_records` ADD `upstream_identity` text;--> statement-breakpoint
ALTER TABLE `tool_servers` ADD `auth` text DEFAULT 'secrets' NOT NULL;