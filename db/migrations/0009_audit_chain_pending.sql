CREATE TABLE `audit_chain_pending` (
	`id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`entry` text NOT NULL,
	`entry_digest` text NOT NULL,
	`audit_id` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_chain_pending_entry` ON `audit_chain_pending` (`tenant_id`,`entry_digest`);--> statement-breakpoint
CREATE INDEX `audit_chain_pending_queue` ON `audit_chain_pending` (`tenant_id`,`id`);