/**
 * External OAuth providers: sign-in, and linking for a signed-in user.
 *
 * - GET /authorize?provider=&scopes=&redirect_to=[&code_challenge=&code_challenge_method=]
 *   redirects to the provider with a sealed, short-lived, single-use `state`
 *   (auth/oauth_state.ts); other query parameters go to the provider (Google's
 *   `prompt`, WorkOS's `connection` ...).
 * - GET /callback (POST for apple's form_post) checks the state, exchanges
 *   the code with the client library, reads the user, finds or creates the
 *   account (auth/accounts.ts) and redirects to the target with the
 *   session in the fragment, or with `?code=` in the PKCE flow
 *   (`POST /token?grant_type=pkce`). Every failure redirects with `error`,
 *   `error_code` and `error_description` in the query and the fragment.
 * - GET /user/identities/authorize (signed in) starts linking; with
 *   `skip_http_redirect=true` it answers `{url}` as auth-js expects, the URL
 *   of a single-use ticket: GET /user/identities/authorize/continue?ticket=
 *   sets the state's cookie in the browser that opens it and redirects to
 *   the provider.
 * - Every state is bound to the browser that started it with a cookie
 *   (api/oauth_binding.ts); a link callback hands out a session only in the
 *   PKCE flow (as a code for the verifier's holder), and in that flow links
 *   nothing itself: the identity is linked at the code exchange
 *   (auth/pkce.ts), so a link URL finished in someone else's browser links
 *   nothing. The implicit flow links at the callback (docs/security.md).
 * - DELETE /user/identities/<identity_id> unlinks one (never the last).
 */
import { ConnectionError, generatePkce, OAuthError } from "../../mod.ts";
import { randomToken } from "../util/crypto.ts";
import { type OpenedState, StateError } from "../auth/oauth_state.ts";
import { readPkceParams } from "../auth/pkce.ts";
import { isRedirectAllowed, verifyRedirectTo } from "../auth/redirect.ts";
import { completeProviderSignIn, unlinkOwnIdentity } from "../auth/external_sign_in.ts";
import { requestMeta } from "./meta.ts";
import { ProviderRegistry } from "../providers/registry.ts";
import { ProviderError } from "../providers/types.ts";
import type { Services } from "../services.ts";
import { callerOf, type Ctx } from "./context.ts";
import { ApiError, AuthError, badRequest, statusOf } from "./errors.ts";
import { isUuid, redirectToParam } from "./input.ts";
import { bindingSetCookie, carriesBinding, isSecure, stateBinding } from "./oauth_binding.ts";

/** Errors whose redirect says `error=access_denied` (the user may not sign in), as GoTrue does. */
const DENIED = new Set(["signup_disabled", "user_banned", "provider_email_needs_verification"]);

/** A failure of the callback, shown to the client in the redirect. */
class CallbackError extends Error {
  constructor(
    readonly error: string,
    readonly errorCode: string,
    description: string,
    readonly target?: string,
  ) {
    super(description);
  }
}

/** The longest provider URL /authorize answers (browsers and proxies refuse longer ones). */
const MAX_PROVIDER_URL = 8000;

/**
 * What a provider's form_post carries that /callback reads (apple posts `user` on the first
 * sign-in), and the most each value may hold when it is carried over into the URL of the
 * top-level GET the browser is sent back with.
 */
const POSTED_PARAMS = ["state", "code", "error", "error_description", "user"];
const MAX_POSTED_VALUE = 2048;

/** The query of the GET that replays a provider's POST: only what /callback reads, bounded. */
function replayQuery(params: URLSearchParams): string {
  const out = new URLSearchParams();
  for (const name of POSTED_PARAMS) {
    const v = params.get(name);
    if (v === null) continue;
    if (v.length > MAX_POSTED_VALUE) {
      throw new CallbackError(
        "invalid_request",
        "bad_oauth_callback",
        `OAuth callback parameter ${name} is too long (at most ${MAX_POSTED_VALUE} characters)`,
      );
    }
    out.set(name, v);
  }
  return `?${out}`;
}

/**
 * Where the user goes afterwards: `redirect_to` when permitted, else the
 * page the browser came from (Referer) when permitted, else SITE_URL, as
 * GoTrue does: a sign-in started without `redirectTo` returns to the app.
 */
function redirectTarget(c: Ctx, s: Services): string {
  const asked = redirectToParam(c);
  if (asked && isRedirectAllowed(s.config, asked)) return asked;
  return verifyRedirectTo(s.config, c.req.header("referer"));
}

/** The provider URL for a sign-in (or a link, with `linkUserId`), and the state in it. */
async function providerUrl(
  c: Ctx,
  s: Services,
  linkUserId?: string,
): Promise<{ url: string; state: string }> {
  const name = c.req.query("provider") ?? "";
  if (!ProviderRegistry.known(name)) {
    throw badRequest(`Unsupported provider: Provider "${name.slice(0, 40)}" could not be found`);
  }
  const provider = s.providers.get(name);
  if (!provider) {
    throw new ApiError(400, "provider_disabled", "Unsupported provider: provider is not enabled");
  }
  const query = Object.fromEntries(new URL(c.req.url).searchParams);
  const pkce = readPkceParams(query);
  const scopes = c.req.query("scopes") ?? "";
  if (scopes.length > 2048) throw badRequest("scopes is too long");
  const ours = provider.spec.pkce ? await generatePkce() : undefined;
  const nonce = randomToken(16);
  const state = await s.oauthStates.seal({
    provider: provider.spec.name,
    redirectTo: redirectTarget(c, s),
    nonce,
    providerVerifier: ours?.codeVerifier,
    codeChallenge: pkce?.codeChallenge,
    codeChallengeMethod: pkce?.codeChallengeMethod,
    linkUserId,
  });
  s.log.info("redirecting to external provider", { provider: provider.spec.name });
  const url = await provider.authorizeUrl({
    state,
    nonce,
    scopes,
    codeChallenge: ours?.codeChallenge,
    extra: new URL(c.req.url).searchParams,
  });
  // Query parameters are passed on to the provider and redirect_to travels in
  // the state: a huge query would make a Location header clients refuse.
  if (url.length > MAX_PROVIDER_URL) {
    throw badRequest(
      `The provider URL would be ${url.length} characters long (at most ${MAX_PROVIDER_URL}): shorten the query parameters or redirect_to`,
    );
  }
  return { url, state };
}

/** Redirects to the provider (or answers `{url}`), binding the state to this browser. */
function answer(
  c: Ctx,
  s: Services,
  to: { url: string; state: string },
  alwaysRedirect = false,
): Response {
  const secure = isSecure(s.config.api.externalUrl);
  const binding = stateBinding(to.state, secure);
  c.header("set-cookie", bindingSetCookie(binding, secure), { append: true });
  c.header("cache-control", "no-store");
  if (!alwaysRedirect && c.req.query("skip_http_redirect") === "true") {
    return c.json({ url: to.url });
  }
  return c.redirect(to.url, 302);
}

/** GET /authorize: a sign-in with an external provider. */
export async function authorize(c: Ctx, s: Services): Promise<Response> {
  return answer(c, s, await providerUrl(c, s));
}

/** GET /user/identities/authorize: links another provider to the caller. */
export async function startLink(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  if (s.config.security.linkIdentityRequirePkce && !c.req.query("code_challenge")) {
    // The implicit flow links at the callback, in whichever browser finishes it; only the
    // PKCE flow ties the link to the browser that started it (docs/security.md).
    throw badRequest(
      "Linking an identity requires the PKCE flow (code_challenge and code_challenge_method): use flowType 'pkce'",
    );
  }
  const to = await providerUrl(c, s, caller.user.id);
  if (c.req.query("skip_http_redirect") !== "true") return answer(c, s, to);
  // auth-js asks with a (cross-origin) fetch, whose cookies browsers drop: the URL it
  // navigates to is a single-use ticket here, which binds the state to that browser.
  const ticket = await s.oauthStates.sealTicket(to.url);
  c.header("cache-control", "no-store");
  return c.json({
    url: `${s.config.api.externalUrl}/user/identities/authorize/continue?ticket=${ticket}`,
  });
}

/** GET /user/identities/authorize/continue?ticket=: the browser that opens the ticket goes on to the provider. */
export async function continueLink(c: Ctx, s: Services): Promise<Response> {
  let url: string;
  try {
    url = await s.oauthStates.redeemTicket(c.req.query("ticket") ?? "");
  } catch (e) {
    if (!(e instanceof StateError)) throw e;
    const why = e.problem === "replayed"
      ? "Link ticket has already been used: start linking again"
      : e.problem === "expired"
      ? "Link ticket has expired: start linking again"
      : "Link ticket is invalid";
    const e2 = new CallbackError("invalid_request", "bad_oauth_state", why);
    return errorRedirect(c, s, e2, s.config.siteUrl);
  }
  const state = new URL(url).searchParams.get("state") ?? "";
  return answer(c, s, { url, state }, true);
}

/** DELETE /user/identities/:identity_id. */
export async function unlink(c: Ctx, s: Services): Promise<Response> {
  const caller = callerOf(c);
  const { user } = caller;
  const id = c.req.param("identity_id");
  if (!isUuid(id)) throw new ApiError(404, "validation_failed", "identity_id must be an UUID");
  await unlinkOwnIdentity(s, user, id.toLowerCase(), requestMeta(c));
  return c.json({});
}

/** GET /callback, and POST /callback for providers that post back (apple's form_post). */
export async function callback(c: Ctx, s: Services): Promise<Response> {
  let params: URLSearchParams;
  if (c.req.method === "POST") {
    const text = await c.req.text().catch(() => "");
    params = new URLSearchParams(text);
  } else params = new URL(c.req.url).searchParams;
  let target = s.config.siteUrl;
  try {
    const raw = params.get("state");
    if (!raw) {
      throw new CallbackError(
        "invalid_request",
        "bad_oauth_callback",
        "OAuth state parameter missing",
      );
    }
    const binding = stateBinding(raw, isSecure(s.config.api.externalUrl));
    const bound = carriesBinding(c.req.header("cookie"), binding);
    if (!bound && c.req.method === "POST") {
      // A provider's form_post is a cross-site POST, which SameSite=Lax cookies do not
      // accompany: the browser comes back once more as a top-level GET, which they do.
      return c.redirect(replayQuery(params), 303);
    }
    let state: OpenedState;
    try {
      state = await s.oauthStates.open(raw);
    } catch (e) {
      if (!(e instanceof StateError)) throw e;
      throw new CallbackError(
        "invalid_request",
        "bad_oauth_state",
        e.message,
        e.data?.redirectTo,
      );
    }
    target = state.redirectTo;
    if (!bound) {
      // Login CSRF (a sign-in someone else started, finished in this browser), or a link
      // URL that leaked (from history, a screenshot, a log) finished by someone else.
      throw new CallbackError(
        "invalid_request",
        "bad_oauth_state",
        "OAuth state was not started in this browser: start again",
      );
    }
    const providerError = params.get("error");
    if (providerError) {
      await s.oauthStates.consume(state).catch(() => {});
      throw new CallbackError(
        providerError.slice(0, 100),
        "oauth_provider_error",
        (params.get("error_description") ?? providerError).slice(0, 500),
      );
    }
    try {
      await s.oauthStates.consume(state);
    } catch (e) {
      if (!(e instanceof StateError)) throw e;
      throw new CallbackError("invalid_request", "bad_oauth_state", e.message);
    }
    const provider = s.providers.get(state.provider);
    if (!provider) {
      throw new CallbackError("invalid_request", "provider_disabled", "Provider is not enabled");
    }
    const code = params.get("code");
    if (!code) {
      throw new CallbackError(
        "invalid_request",
        "bad_oauth_callback",
        "OAuth callback with missing authorization code",
      );
    }
    let result;
    try {
      result = await provider.complete({
        code,
        codeVerifier: state.providerVerifier,
        nonce: state.nonce,
        callback: params,
        now: s.clock.now(),
      });
    } catch (e) {
      if (
        !(e instanceof OAuthError || e instanceof ProviderError || e instanceof ConnectionError)
      ) {
        throw e;
      }
      s.log.warn("external provider refused or failed", {
        provider: state.provider,
        error: e.message.split("\n")[0].slice(0, 300),
      });
      const what = e instanceof OAuthError ? "Unable to exchange external code" : e.message;
      throw new CallbackError("server_error", "oauth_provider_error", what.slice(0, 300));
    }
    const outcome = await completeProviderSignIn(s, {
      provider: provider.spec.name,
      user: result.user,
      emailOptional: provider.spec.emailOptional === true,
      accessToken: result.accessToken,
      refreshToken: result.refreshToken,
      linkUserId: state.linkUserId ?? null,
      pkce: state.codeChallenge && state.codeChallengeMethod
        ? { codeChallenge: state.codeChallenge, codeChallengeMethod: state.codeChallengeMethod }
        : undefined,
      redirectTo: target,
    }, requestMeta(c));
    const to = new URL(target);
    if ("code" in outcome) to.searchParams.set("code", outcome.code);
    else if ("set" in outcome) {
      const set = outcome.set;
      const frag = new URLSearchParams({
        access_token: set.access_token,
        token_type: set.token_type,
        expires_in: String(set.expires_in),
        expires_at: String(set.expires_at),
        refresh_token: set.refresh_token,
        provider_token: result.accessToken,
        provider: provider.spec.name,
      });
      if (result.refreshToken) frag.set("provider_refresh_token", result.refreshToken);
      to.hash = frag.toString();
    }
    return c.redirect(to.href, c.req.method === "POST" ? 303 : 302);
  } catch (e) {
    return errorRedirect(c, s, e, target);
  }
}

/** Redirects to `target` with the error in the query and the fragment (as GoTrue does). */
function errorRedirect(c: Ctx, s: Services, e: unknown, fallback: string): Response {
  let error: string, code: string, description: string;
  let target = fallback;
  if (e instanceof CallbackError) {
    ({ error, errorCode: code } = e);
    description = e.message;
    if (e.target) target = e.target;
  } else if (e instanceof AuthError) {
    code = e.errorCode;
    error = DENIED.has(code)
      ? "access_denied"
      : statusOf(e) >= 500
      ? "server_error"
      : "invalid_request";
    description = e.message;
  } else {
    s.log.error("external sign-in failed", {
      error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
    });
    error = "server_error";
    code = "unexpected_failure";
    description = "Unexpected failure, please check server logs for more information";
  }
  const to = new URL(target);
  const q = new URLSearchParams({ error, error_code: code, error_description: description });
  for (const [k, v] of q) to.searchParams.set(k, v);
  to.hash = q.toString();
  return c.redirect(to.href, c.req.method === "POST" ? 303 : 302);
}
