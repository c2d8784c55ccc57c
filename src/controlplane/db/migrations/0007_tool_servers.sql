CREATE TABLE `tool_server_assignments` (
	`agent_id` text NOT NULL,
	`server_id` text NOT NULL,
	`assigned_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `server_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `tool_servers`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tool_server_assignments_server` ON `tool_server_assignments` (`server_id`);--> statement-breakpoint
CREATE TABLE `tool_servers` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`transport` text NOT NULL,
	`url` text,
	`command` text,
	`args` text DEFAULT '[]' NOT NULL,
	`secrets_sealed` text,
	`secret_names` text DEFAULT '[]' NOT NULL,
	`sealed_to` text DEFAULT '[]' NOT NULL,
	`sealed_recipients` text DEFAULT '[]' NOT NULL,
	`allowed_tools` text,
	`access_overrides` text DEFAULT '{}' NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tool_servers_ws_name` ON `tool_servers` (`workspace_id`,`name`);--> statement-breakpoint
ALTER TABLE `runtime_replicas` ADD `tool_servers` text;