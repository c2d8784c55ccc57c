// Request schemas of sign-in, `svc login` and API tokens.
import { t } from "elysia";

export const SessionCreate = t.Object({
  email: t.String({ minLength: 1, maxLength: 320 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
  organization_id: t.Optional(t.String({ maxLength: 64 })),
});

export const LoginRequestCreate = t.Optional(t.Object({}));
export const LoginRequestApprove = t.Optional(t.Object({}));
export const LoginRequestToken = t.Object({ poll_secret: t.String({ minLength: 1, maxLength: 200 }) });
export const LoginRequestParams = t.Object({ id: t.String({ maxLength: 64 }) });

export const ApiTokenCreate = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) });
export const ApiTokenParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 64 }) });
