ALTER TABLE `sessions` ADD `turn_state` text DEFAULT 'idle' NOT NULL;--> statement-breakpoint
ALTER TABLE `sessions` ADD `waiting` integer DEFAULT 0 NOT NULL;