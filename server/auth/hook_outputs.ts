/**
 * What the hooks that decide answer, read as GoTrue reads them: the custom
 * access token hook's claims (the required ones must stay) and the
 * verification attempt hooks' decision. Answers that make no sense are
 * reported to the operator (Hooks.report, the `hook_failed` audit entry).
 */
import type { Queryable } from "../db/db.ts";
import type { HookName, Hooks } from "./hooks.ts";
import { hookFailed, type HookOutput } from "./hook_answers.ts";

/** Claims a custom access token must keep (GoTrue's schema of the hook's output). */
const REQUIRED_CLAIMS: [string, (v: unknown) => boolean][] = [
  [
    "aud",
    (v) => typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string")),
  ],
  ["exp", (v) => typeof v === "number"],
  ["iat", (v) => typeof v === "number"],
  ["sub", (v) => typeof v === "string"],
  ["role", (v) => typeof v === "string"],
  ["aal", (v) => typeof v === "string"],
  ["session_id", (v) => typeof v === "string"],
  ["email", (v) => typeof v === "string"],
  ["phone", (v) => typeof v === "string"],
  ["is_anonymous", (v) => typeof v === "boolean"],
];

/**
 * What is wrong with a hook's answer for what the hook is for, or null:
 * custom access token claims that are missing or drop a required claim, a
 * verification attempt decision that is neither "continue" nor "reject".
 * (A hook's `{"error"}` answer is handled before; see Hooks.invoke.)
 */
export function outputProblem(name: HookName, out: HookOutput): string | null {
  if (name === "custom_access_token") {
    const c = out?.claims;
    if (!c || typeof c !== "object" || Array.isArray(c)) {
      return `answered without a "claims" object`;
    }
    for (const [claim, ok] of REQUIRED_CLAIMS) {
      if (!ok((c as Record<string, unknown>)[claim])) {
        return `answered claims that drop a required one: ${claim} is missing or of the wrong type`;
      }
    }
  }
  if (name === "password_verification_attempt" || name === "mfa_verification_attempt") {
    const d = out?.decision;
    if (d !== undefined && d !== "continue" && d !== "reject") {
      return `answered decision ${
        JSON.stringify(d).slice(0, 40)
      }, which is neither "continue" nor "reject" (taken as continue)`;
    }
  }
  return null;
}

/**
 * Runs the custom access token hook on `claims` and returns the claims to
 * sign; `iss` stays ours.
 *
 * @throws {AuthError} 500 when the answer has no `claims` or drops a required claim
 */
export async function customizeClaims(
  hooks: Hooks,
  userId: string,
  claims: Record<string, unknown>,
  authenticationMethod: string,
  tx?: Queryable,
): Promise<Record<string, unknown>> {
  const out = await hooks.invoke(
    "custom_access_token",
    { user_id: userId, claims, authentication_method: authenticationMethod },
    "",
    tx,
  );
  const problem = outputProblem("custom_access_token", out);
  if (problem) {
    hooks.report("custom_access_token", problem);
    throw hookFailed(
      out?.claims
        ? `output claims do not conform to the expected schema: ${problem.split(": ")[1]}`
        : "output claims field is missing",
    );
  }
  const { iss: _ignored, ...rest } = out!.claims as Record<string, unknown>;
  return rest;
}

/** GoTrue's default messages of a rejected attempt. */
export const DEFAULT_PASSWORD_REJECTION =
  "Further password verification attempts will be rejected.";
export const DEFAULT_MFA_REJECTION = "Further MFA verification attempts will be rejected.";

/** A verification hook's decision. */
export interface AttemptDecision {
  reject: boolean;
  message: string;
  logout: boolean;
}

/**
 * Reads `{decision, message, should_logout_user}`; anything but "reject"
 * continues, as in GoTrue, but a decision that is neither "continue" nor
 * "reject" (a typo such as "deny" lets every attempt through) is reported.
 */
export function attemptDecision(
  hooks: Hooks,
  name: HookName,
  out: HookOutput,
  defaultMessage: string,
): AttemptDecision {
  const problem = outputProblem(name, out);
  if (problem) hooks.report(name, problem);
  const reject = out?.decision === "reject";
  const message = typeof out?.message === "string" && out.message ? out.message : defaultMessage;
  return { reject, message, logout: out?.should_logout_user === true };
}
