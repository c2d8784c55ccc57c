-- The rows in no store chain, by id (the last part of an export in chain order): usually none, so ingest never writes to it (issue 30).
CREATE INDEX "audit_org_unchained_id" ON "audit_records" USING btree ("org_id","id") WHERE "audit_records"."store_chain" is null;
