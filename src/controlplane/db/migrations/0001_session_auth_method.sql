ALTER TABLE `sessions` ADD `auth_method` text DEFAULT 'password' NOT NULL;--> statement-breakpoint
-- Sessions opened before this migration do not say how they were authenticated (a single
-- sign-on session would otherwise pass as a password session): everyone signs in once more.
DELETE FROM `sessions`;
