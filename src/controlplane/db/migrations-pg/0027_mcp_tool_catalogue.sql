CREATE TABLE "tool_server_tools" (
	"server_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"skipped" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"listed_at" bigint NOT NULL,
	CONSTRAINT "tool_server_tools_server_id_installation_id_pk" PRIMARY KEY("server_id","installation_id")
);
--> statement-breakpoint
ALTER TABLE "tool_server_tools" ADD CONSTRAINT "tool_server_tools_server_id_tool_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."tool_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_server_tools" ADD CONSTRAINT "tool_server_tools_installation_id_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."installations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tool_server_tools_installation" ON "tool_server_tools" USING btree ("installation_id");