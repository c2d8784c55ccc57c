CREATE TABLE `tool_server_tools` (
	`server_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`tools` text DEFAULT '[]' NOT NULL,
	`skipped` text DEFAULT '[]' NOT NULL,
	`listed_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `installation_id`),
	FOREIGN KEY (`server_id`) REFERENCES `tool_servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`installation_id`) REFERENCES `installations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tool_server_tools_installation` ON `tool_server_tools` (`installation_id`);