ALTER TABLE `policies` ADD `condition` text;--> statement-breakpoint
ALTER TABLE `policies` ADD `mode` text DEFAULT 'enforce' NOT NULL;