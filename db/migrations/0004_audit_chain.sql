CREATE TABLE `audit_chain` (
	`tenant_id` text NOT NULL,
	`seq` integer NOT NULL,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL,
	`entry` text NOT NULL,
	`entry_digest` text NOT NULL,
	`audit_id` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `seq`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_chain_entry` ON `audit_chain` (`tenant_id`,`entry_digest`);