ALTER TABLE "model_profiles" ADD COLUMN "sealed_recipients" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
-- Keys stored before this column: record the credential-sync recipients their replicas have
-- now, the best knowledge there is (readiness compared replica ids until now).
UPDATE "model_profiles" SET "sealed_recipients" = coalesce((
  SELECT jsonb_agg(r."credential_sync_recipient" ORDER BY r."id") FROM "runtime_replicas" r WHERE r."id" IN (SELECT jsonb_array_elements_text("model_profiles"."sealed_to"))
), '[]'::jsonb) WHERE "api_key_sealed" IS NOT NULL;
