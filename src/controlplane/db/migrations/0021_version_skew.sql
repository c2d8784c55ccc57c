CREATE TABLE `controlplane_replicas` (
	`id` text PRIMARY KEY NOT NULL,
	`version` text NOT NULL,
	`schema` text NOT NULL,
	`policy_features` text NOT NULL,
	`hostname` text NOT NULL,
	`started_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `api_tokens` ADD `last_client` text;--> statement-breakpoint
ALTER TABLE `policies` ADD `requires` text DEFAULT '[]' NOT NULL;