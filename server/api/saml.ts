/**
 * SAML SSO is a GoTrue feature this server does not have. GoTrue with SAML off (its default)
 * answers every /sso route 404 saml_provider_disabled (middleware.go requireSAMLEnabled, before
 * its rate limit and captcha); so do we, so that auth-js's signInWithSSO reports the same error.
 */
import { ApiError } from "./errors.ts";

/** POST /sso, GET /sso/saml/metadata, POST /sso/saml/acs. */
export function samlDisabled(): Response {
  throw new ApiError(404, "saml_provider_disabled", "SAML 2.0 is disabled");
}
