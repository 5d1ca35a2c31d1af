ALTER TABLE `decision_audit` ADD `decided_by_role` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `decided_by_connection` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `policy` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `decision_audit` ADD `approved_by` text;--> statement-breakpoint
CREATE INDEX `decision_audit_person` ON `decision_audit` (`tenant_id`,`decided_by_issuer`,`decided_by_subject`,`at`);