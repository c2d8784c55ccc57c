CREATE TABLE `audit_retention_runs` (
	`org_id` text PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`state` text NOT NULL,
	`actor` text NOT NULL,
	`started_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`retention_days` integer,
	`cutoff` integer,
	`deleted` integer DEFAULT 0 NOT NULL,
	`chains_cut` integer DEFAULT 0 NOT NULL,
	`checkpoint` integer,
	`detail` text
);
