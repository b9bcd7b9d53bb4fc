/**
 * Binds an external sign-in's `state` to the browser that started it (beyond
 * GoTrue). `/authorize` sets a cookie holding a hash of the state it made;
 * `/callback` refuses a sign-in state the browser did not start, which stops
 * login CSRF: an attacker who starts a sign-in with their own provider account
 * and gets a victim's browser to finish it would otherwise sign the victim
 * into the attacker's account.
 *
 * One cookie per state (its name carries a prefix of the hash), so several
 * sign-ins in tabs of one browser do not overwrite each other. The cookie is
 * HttpOnly, SameSite=Lax (a provider's redirect back is a top-level GET
 * navigation, which carries it), Path=/ (the server may sit behind a path
 * prefix), lives as long as a state (STATE_TTL), and is Secure with the
 * `__Host-` prefix when API_EXTERNAL_URL is https. Only the hash is stored:
 * the cookie cannot be turned back into a usable state.
 */
import { sha256Base64url, timingSafeEqual } from "../util/crypto.ts";
import { STATE_TTL } from "../auth/oauth_state.ts";

/** The binding cookie of one state. */
export interface StateBinding {
  name: string;
  value: string;
}

/** Whether the browser sees this server over https (API_EXTERNAL_URL). */
export function isSecure(externalUrl: string): boolean {
  return externalUrl.toLowerCase().startsWith("https:");
}

/** The cookie that binds `state` to a browser. */
export function stateBinding(state: string, secure: boolean): StateBinding {
  const hash = sha256Base64url(`oauth-state:${state}`);
  return { name: `${secure ? "__Host-" : ""}authsvc-oauth-${hash.slice(0, 12)}`, value: hash };
}

/** The Set-Cookie header value for a binding. */
export function bindingSetCookie(b: StateBinding, secure: boolean): string {
  return `${b.name}=${b.value}; Max-Age=${STATE_TTL}; Path=/; HttpOnly; SameSite=Lax${
    secure ? "; Secure" : ""
  }`;
}

/** Whether the request's Cookie header carries the binding. */
export function carriesBinding(cookieHeader: string | undefined, b: StateBinding): boolean {
  if (!cookieHeader) return false;
  for (const part of cookieHeader.split(";")) {
    const i = part.indexOf("=");
    if (i < 0 || part.slice(0, i).trim() !== b.name) continue;
    if (timingSafeEqual(part.slice(i + 1).trim(), b.value)) return true;
  }
  return false;
}
