CREATE TABLE "idp_subjects" (
	"account_id" text NOT NULL,
	"issuer" text NOT NULL,
	"subject" text NOT NULL,
	"org_id" text NOT NULL,
	"first_seen_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL,
	CONSTRAINT "idp_subjects_account_id_issuer_subject_pk" PRIMARY KEY("account_id","issuer","subject")
);
--> statement-breakpoint
CREATE TABLE "membership_grants" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"account_id" text NOT NULL,
	"kind" text NOT NULL,
	"role" text NOT NULL,
	"previous_role" text,
	"by_account_id" text,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_recovery_policies" (
	"org_id" text PRIMARY KEY NOT NULL,
	"approver_min_age_hours" integer NOT NULL,
	"previous_min_age_hours" integer NOT NULL,
	"changed_at" bigint NOT NULL,
	"changed_by" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "admin_notice_dismissals" (
	"notice_id" text NOT NULL,
	"account_id" text NOT NULL,
	"dismissed_at" bigint NOT NULL,
	CONSTRAINT "admin_notice_dismissals_notice_id_account_id_pk" PRIMARY KEY("notice_id","account_id")
);
--> statement-breakpoint
CREATE TABLE "admin_notices" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"action" text NOT NULL,
	"result" text NOT NULL,
	"actor_account_id" text NOT NULL,
	"text" text NOT NULL,
	"ref" text,
	"event_id" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_tokens" ADD COLUMN "authenticated_at" bigint;--> statement-breakpoint
ALTER TABLE "api_tokens" ADD COLUMN "idp" jsonb;--> statement-breakpoint
ALTER TABLE "login_requests" ADD COLUMN "approver_authenticated_at" bigint;--> statement-breakpoint
ALTER TABLE "login_requests" ADD COLUMN "approver_idp" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "authenticated_at" bigint;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "idp" jsonb;--> statement-breakpoint
ALTER TABLE "idp_subjects" ADD CONSTRAINT "idp_subjects_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idp_subjects" ADD CONSTRAINT "idp_subjects_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "membership_grants" ADD CONSTRAINT "membership_grants_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "membership_grants" ADD CONSTRAINT "membership_grants_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "membership_grants" ADD CONSTRAINT "membership_grants_by_account_id_accounts_id_fk" FOREIGN KEY ("by_account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_recovery_policies" ADD CONSTRAINT "audit_recovery_policies_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_recovery_policies" ADD CONSTRAINT "audit_recovery_policies_changed_by_accounts_id_fk" FOREIGN KEY ("changed_by") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "admin_notice_dismissals" ADD CONSTRAINT "admin_notice_dismissals_notice_id_admin_notices_id_fk" FOREIGN KEY ("notice_id") REFERENCES "public"."admin_notices"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "admin_notice_dismissals" ADD CONSTRAINT "admin_notice_dismissals_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "admin_notices" ADD CONSTRAINT "admin_notices_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "admin_notices" ADD CONSTRAINT "admin_notices_actor_account_id_accounts_id_fk" FOREIGN KEY ("actor_account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "idp_subjects_subject" ON "idp_subjects" USING btree ("issuer","subject");--> statement-breakpoint
CREATE INDEX "membership_grants_account" ON "membership_grants" USING btree ("account_id","at");--> statement-breakpoint
CREATE INDEX "admin_notices_org_id" ON "admin_notices" USING btree ("org_id","id");--> statement-breakpoint
-- Memberships from before grants were kept: their grantor is unknown (docs/audit.md "Escrow recovery").
INSERT INTO "membership_grants" ("id", "org_id", "account_id", "kind", "role", "previous_role", "by_account_id", "at") SELECT 'mgr_unknown_' || "org_id" || '_' || "account_id", "org_id", "account_id", 'unknown', "role", NULL, NULL, "created_at" FROM "memberships";