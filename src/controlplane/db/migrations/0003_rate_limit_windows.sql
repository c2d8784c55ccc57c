CREATE TABLE `rate_limit_windows` (
	`scope` text NOT NULL,
	`key` text NOT NULL,
	`window_start` integer NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`scope`, `key`)
);
--> statement-breakpoint
CREATE INDEX `rate_limit_windows_start` ON `rate_limit_windows` (`scope`,`window_start`);--> statement-breakpoint
ALTER TABLE `login_requests` ADD `last_polled_at` integer;