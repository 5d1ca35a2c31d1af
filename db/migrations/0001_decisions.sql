CREATE TABLE `decision_audit` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`session_id` text NOT NULL,
	`agent` text NOT NULL,
	`tool_call_id` text,
	`kind` text,
	`name` text,
	`operation` text,
	`outcome` text NOT NULL,
	`option_id` text,
	`option_kind` text,
	`decided_by` text NOT NULL,
	`decided_by_key` text,
	`decided_by_user` text,
	`rule_id` text,
	`at` integer DEFAULT (unixepoch() * 1000) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `decision_audit_tenant` ON `decision_audit` (`tenant_id`,`at`);--> statement-breakpoint
CREATE TABLE `decision_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`decision` text NOT NULL,
	`scope_project` text,
	`scope_user` text,
	`scope_agent` text,
	`matcher` text NOT NULL,
	`matcher_text` text NOT NULL,
	`description` text NOT NULL,
	`expires_at` integer,
	`created_by_key` text,
	`created_by_user` text,
	`created_from_session` text,
	`created_from_tool_call` text,
	`created_at` integer DEFAULT (unixepoch() * 1000) NOT NULL,
	`revoked_at` integer,
	`hits` integer DEFAULT 0 NOT NULL,
	`last_hit_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `decision_rules_tenant` ON `decision_rules` (`tenant_id`,`created_at`);