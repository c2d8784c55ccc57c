CREATE TABLE "tool_server_consents" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"server_id" text NOT NULL,
	"user_id" text,
	"link_hash" text NOT NULL,
	"link_wrapped" text NOT NULL,
	"state_hash" text,
	"verifier_wrapped" text,
	"opened_at" bigint,
	"used_at" bigint,
	"expires_at" bigint NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_server_grants" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"server_id" text NOT NULL,
	"user_id" text,
	"subject" text,
	"access_wrapped" text NOT NULL,
	"refresh_wrapped" text,
	"expires_at" bigint,
	"scope" text,
	"refreshing_until" bigint,
	"refreshed_at" bigint,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_server_oauth" (
	"server_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"issuer" text,
	"metadata" jsonb,
	"resource" text,
	"scope" text,
	"registration" text,
	"client_id" text,
	"client_secret_wrapped" text,
	"redirect_uri" text
);
--> statement-breakpoint
ALTER TABLE "audit_records" ADD COLUMN "upstream_identity" text;--> statement-breakpoint
ALTER TABLE "tool_servers" ADD COLUMN "auth" text DEFAULT 'secrets' NOT NULL;--> statement-breakpoint
ALTER TABLE "tool_server_consents" ADD CONSTRAINT "tool_server_consents_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_consents" ADD CONSTRAINT "tool_server_consents_server_id_tool_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."tool_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_consents" ADD CONSTRAINT "tool_server_consents_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_grants" ADD CONSTRAINT "tool_server_grants_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_grants" ADD CONSTRAINT "tool_server_grants_server_id_tool_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."tool_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_grants" ADD CONSTRAINT "tool_server_grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_oauth" ADD CONSTRAINT "tool_server_oauth_server_id_tool_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."tool_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_oauth" ADD CONSTRAINT "tool_server_oauth_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "tool_server_consents_link" ON "tool_server_consents" USING btree ("link_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "tool_server_consents_state" ON "tool_server_consents" USING btree ("state_hash");--> statement-breakpoint
CREATE INDEX "tool_server_consents_server" ON "tool_server_consents" USING btree ("server_id");--> statement-breakpoint
CREATE INDEX "tool_server_grants_server_user" ON "tool_server_grants" USING btree ("server_id","user_id");