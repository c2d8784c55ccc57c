ALTER TABLE `model_profiles` ADD `sealed_recipients` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
-- Keys stored before this column: record the credential-sync recipients their replicas have
-- now, the best knowledge there is (readiness compared replica ids until now).
UPDATE `model_profiles` SET `sealed_recipients` = (
  SELECT json_group_array(r.`credential_sync_recipient`) FROM `runtime_replicas` r, json_each(`model_profiles`.`sealed_to`) j WHERE r.`id` = j.`value`
) WHERE `api_key_sealed` IS NOT NULL;
