-- Tool names in byte order for the tool index (audit/bounds.ts) without holding writes: an expression index on (tool_name COLLATE "C"), built CONCURRENTLY after this migration's short transaction (postgres-migrate.ts), where an earlier build of the filter-index migration changed the column's collation (rebuilding its indexes under an exclusive lock). Until the build ends, a tool search reads without the tool index.
DROP INDEX "audit_org_tool_decision_id";--> statement-breakpoint
-- A store that ran that earlier build has tool_name in "C": back to the database's collation, as on every other store (with the tool index dropped above, nothing is rebuilt). Written by hand.
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation WHERE a.attrelid = '"audit_records"'::regclass AND a.attname = 'tool_name' AND c.collname = 'C') THEN
    ALTER TABLE "audit_records" ALTER COLUMN "tool_name" SET DATA TYPE text COLLATE "default";
  END IF;
END $$;--> statement-breakpoint
CREATE INDEX "audit_org_tool_decision_id" ON "audit_records" USING btree ("org_id",("tool_name" COLLATE "C"),"decision","id");
