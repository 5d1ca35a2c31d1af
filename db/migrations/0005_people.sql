CREATE TABLE `tenant_identity` (
	`tenant_id` text NOT NULL,
	`provider` text NOT NULL,
	`issuer` text NOT NULL,
	`audience` text NOT NULL,
	`jwks_url` text NOT NULL,
	`user_claim` text DEFAULT 'sub' NOT NULL,
	`groups_claim` text,
	`name_claim` text,
	`updated_at` integer DEFAULT (unixepoch() * 1000) NOT NULL,
	PRIMARY KEY(`tenant_id`, `provider`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tenant_identity_issuer_audience` ON `tenant_identity` (`issuer`,`audience`);--> statement-breakpoint
CREATE TABLE `tickets` (
	`hash` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`path` text NOT NULL,
	`holder` text NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tickets_expires` ON `tickets` (`expires_at`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `user` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `role` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `decided_by_issuer` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `decided_by_subject` text;