CREATE TABLE `identity_proofs` (
	`issuer` text NOT NULL,
	`audience` text NOT NULL,
	`tenant_id` text NOT NULL,
	`proven_at` integer NOT NULL,
	PRIMARY KEY(`issuer`, `audience`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
DROP INDEX `tenant_identity_issuer_audience`;--> statement-breakpoint
CREATE INDEX `tenant_identity_issuer_audience` ON `tenant_identity` (`issuer`,`audience`);