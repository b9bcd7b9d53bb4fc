/** GET /health, GET /settings, GET /.well-known/jwks.json. */
import { PROVIDERS } from "../config/mod.ts";
import type { Services } from "../services.ts";
import { DESCRIPTION, NAME, VERSION } from "../version.ts";
import type { Ctx } from "./context.ts";
import { ApiError } from "./errors.ts";

/** GET /health. */
export async function health(c: Ctx, s: Services): Promise<Response> {
  if (!(await s.db.ping())) {
    throw new ApiError(503, "service_unavailable", "Database is not reachable");
  }
  return c.json({ version: VERSION, name: NAME, description: DESCRIPTION });
}

/** GET /settings. */
export function settings(c: Ctx, s: Services): Response {
  const cfg = s.config;
  const external: Record<string, boolean> = {};
  for (const p of PROVIDERS) external[p] = cfg.external.providers[p].enabled;
  external.email = cfg.external.emailEnabled;
  external.phone = cfg.external.phoneEnabled;
  external.anonymous_users = cfg.external.anonymousUsersEnabled;
  return c.json({
    external,
    disable_signup: cfg.disableSignup,
    autoconfirm: cfg.mailer.autoconfirm,
    mailer_autoconfirm: cfg.mailer.autoconfirm,
    phone_autoconfirm: cfg.sms.autoconfirm,
    sms_provider: cfg.sms.provider,
    anonymous_users: cfg.external.anonymousUsersEnabled,
    saml_enabled: false,
  });
}

/** GET /.well-known/jwks.json. */
export function jwks(c: Ctx, s: Services): Response {
  c.header("Cache-Control", "public, max-age=600");
  return c.json(s.jwt.jwks());
}
