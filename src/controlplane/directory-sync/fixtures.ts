// Test fixtures shared by the directory-sync tests: a valid settings body for PUT /directory-sync.
export const settingsBody = (over: Record<string, unknown> = {}) => ({
  tenant_id: "11111111-1111-4111-8111-111111111111",
  client_id: "22222222-2222-4222-8222-222222222222",
  app_id: "33333333-3333-4333-8333-333333333333",
  client_secret: "s3cret",
  dry_run: true,
  create_users: false,
  ...over,
});
