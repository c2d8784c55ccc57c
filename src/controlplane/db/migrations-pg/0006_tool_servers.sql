CREATE TABLE "tool_server_assignments" (
	"agent_id" text NOT NULL,
	"server_id" text NOT NULL,
	"assigned_at" bigint NOT NULL,
	CONSTRAINT "tool_server_assignments_agent_id_server_id_pk" PRIMARY KEY("agent_id","server_id")
);
--> statement-breakpoint
CREATE TABLE "tool_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"transport" text NOT NULL,
	"url" text,
	"command" text,
	"args" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"secrets_sealed" text,
	"secret_names" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"sealed_to" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"sealed_recipients" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"allowed_tools" jsonb,
	"access_overrides" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "runtime_replicas" ADD COLUMN "tool_servers" jsonb;--> statement-breakpoint
ALTER TABLE "tool_server_assignments" ADD CONSTRAINT "tool_server_assignments_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_assignments" ADD CONSTRAINT "tool_server_assignments_server_id_tool_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."tool_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_servers" ADD CONSTRAINT "tool_servers_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_servers" ADD CONSTRAINT "tool_servers_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tool_server_assignments_server" ON "tool_server_assignments" USING btree ("server_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tool_servers_ws_name" ON "tool_servers" USING btree ("workspace_id","name");