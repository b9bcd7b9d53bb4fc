/**
 * The operator's check of the configured auth hooks (the console's Hooks
 * page, docs/hooks.md "Checking the hooks"): each enabled hook gets a sample
 * payload of its kind, signed as every real call is, and the result says
 * what came back, how long it took, and whether the answer would work in the
 * real flow (the same reading as Hooks.invoke and hook_outputs.ts).
 *
 * An HTTP hook also gets the same payload once more with a signature made
 * with a wrong secret: a hook that accepts it does not verify signatures, and
 * anyone who can reach it can forge calls (auth#2038). A pg-functions hook
 * runs in a transaction that is rolled back, so it changes nothing.
 */
import { HookFunctionStore } from "../store/hook_functions.ts";
import { type HookName, type Hooks, METADATA_NAMES, webhookSignature } from "./hooks.ts";
import {
  answerOf,
  errorOf,
  type HookOutput,
  problemOf,
  readLimited,
  shownUri,
} from "./hook_answers.ts";
import { outputProblem } from "./hook_outputs.ts";
import { HOOK_NAMES } from "../config/hooks.ts";

/** How much of an answer the check shows. */
const SHOWN_ANSWER = 2000;

/** What the signature probe found. */
export type SignatureVerdict =
  /** The signed call was accepted, the wrongly signed one refused (4xx). */
  | "verified"
  /** The wrongly signed call was accepted: the hook does not check signatures. */
  | "not_checked"
  /** The signed call itself was refused with 401 or 403: it checks with another secret. */
  | "rejected_ours"
  /** Neither tells (the hook failed, or answered 5xx to the forged call). */
  | "unknown";

/** One hook's check. */
export interface HookCheckResult {
  hook: HookName;
  uri: string;
  kind: "http" | "pg-functions";
  /** The HTTP status of the signed call (null for a function, or when unreachable). */
  status: number | null;
  ms: number;
  /** The start of the answer as received (or the function's result as JSON). */
  answer: string;
  /** True when the real flow would use this answer. */
  ok: boolean;
  /** What is wrong, in words, when not ok; the hook's own `{"error"}` answer is named as such. */
  problem: string | null;
  /** HTTP hooks: the signature probe's verdict and the forged call's status. */
  signature: { verdict: SignatureVerdict; forgedStatus: number | null } | null;
}

/** The operator a sample payload is about (their user as GET /user shows it). */
export type SampleUser = Record<string, unknown> & { id: string };

/** A sample payload of each hook's kind, as the flows send it (without metadata). */
export function samplePayload(name: HookName, user: SampleUser, siteUrl: string) {
  const now = Math.floor(Date.now() / 1000);
  const email = typeof user.email === "string" ? user.email : "";
  switch (name) {
    case "custom_access_token":
      return {
        user_id: user.id,
        claims: {
          aud: "authenticated",
          exp: now + 3600,
          iat: now,
          sub: user.id,
          email,
          phone: typeof user.phone === "string" ? user.phone : "",
          role: typeof user.role === "string" ? user.role : "authenticated",
          aal: "aal1",
          amr: [{ method: "password", timestamp: now }],
          session_id: crypto.randomUUID(),
          is_anonymous: false,
          app_metadata: user.app_metadata ?? {},
          user_metadata: user.user_metadata ?? {},
        },
        authentication_method: "password",
      };
    case "send_email":
      return {
        user,
        email_data: {
          token: "123456",
          token_hash: "hook-check-sample-token-hash",
          redirect_to: siteUrl,
          email_action_type: "signup",
          site_url: siteUrl,
          token_new: "",
          token_hash_new: "",
          email,
        },
      };
    case "send_sms":
      return { user, sms: { otp: "123456", phone: "15555550100", sms_type: "otp" } };
    case "password_verification_attempt":
      return { user_id: user.id, valid: true };
    case "mfa_verification_attempt":
      return { user_id: user.id, factor_id: crypto.randomUUID(), factor_type: "totp", valid: true };
    case "before_user_created":
      return { user: { ...user, id: crypto.randomUUID(), email: "hook-check@example.com" } };
    case "after_user_created":
      return { user };
  }
}

/** What the real flow would make of an answer: null when usable, else the problem. */
function judge(name: HookName, read: () => HookOutput): string | null {
  try {
    const out = read();
    const own = errorOf(out);
    if (own) return `answered its own error: ${own.message}`;
    return outputProblem(name, out);
  } catch (e) {
    return problemOf(e);
  }
}

/** Checks every enabled hook with a sample payload about `user`. */
export async function checkHooks(hooks: Hooks, user: SampleUser): Promise<HookCheckResult[]> {
  const out: HookCheckResult[] = [];
  for (const name of HOOK_NAMES) {
    if (!hooks.enabled(name)) continue;
    const input = {
      metadata: {
        uuid: crypto.randomUUID(),
        time: new Date().toISOString(),
        name: METADATA_NAMES[name],
        ip_address: "",
      },
      ...samplePayload(name, user, hooks.config.siteUrl),
    };
    const uri = hooks.config.hooks.points[name].uri;
    out.push(
      uri.toLowerCase().startsWith("pg-functions:")
        ? await checkFunction(hooks, name, uri, input)
        : await checkHttp(hooks, name, uri, input),
    );
  }
  return out;
}

/** Rolls the trial call's transaction back. */
class Rollback extends Error {}

async function checkFunction(
  hooks: Hooks,
  name: HookName,
  uri: string,
  input: unknown,
): Promise<HookCheckResult> {
  const [, schema, fn] = new URL(uri).pathname.split("/");
  const ms = Math.max(1, Math.round(hooks.config.hooks.pgTimeoutSec * 1000));
  const started = performance.now();
  let result: unknown;
  let failure: string | null = null;
  try {
    await hooks.db.transaction(async (tx) => {
      result = await new HookFunctionStore(hooks.db).call(schema, fn, input, ms, tx);
      throw new Rollback();
    });
  } catch (e) {
    if (!(e instanceof Rollback)) failure = `the function failed: ${problemOf(e)}`;
  }
  const took = Math.round(performance.now() - started);
  const text = result === undefined ? "" : JSON.stringify(result) ?? "";
  const problem = failure ?? judge(name, () => {
    const v = typeof result === "string" ? JSON.parse(result) : result;
    if (v === null || v === undefined) return null;
    if (typeof v !== "object" || Array.isArray(v)) {
      throw new Error("the function returned something other than a JSON object");
    }
    return v as Record<string, unknown>;
  });
  return {
    hook: name,
    uri: shownUri(uri),
    kind: "pg-functions",
    status: null,
    ms: took,
    answer: text.slice(0, SHOWN_ANSWER),
    ok: problem === null,
    problem,
    signature: null,
  };
}

/** One POST of `body`, signed with `secrets`; the status and answer, or the failure. */
async function post(hooks: Hooks, uri: string, body: string, secrets: string[]) {
  const id = crypto.randomUUID();
  const ts = Math.floor(Date.now() / 1000);
  const res = await hooks.fetchFn(uri, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(ts),
      "webhook-signature": await webhookSignature(secrets, id, ts, body),
    },
    body,
    signal: AbortSignal.timeout(hooks.config.hooks.httpTimeoutSec * 1000),
    redirect: "manual",
  });
  return { res, body: await readLimited(res) };
}

/** A Standard Webhooks secret nobody configured. */
function wrongSecret(): string {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  return `v1,whsec_${btoa(String.fromCharCode(...raw))}`;
}

async function checkHttp(
  hooks: Hooks,
  name: HookName,
  uri: string,
  input: unknown,
): Promise<HookCheckResult> {
  const body = JSON.stringify(input);
  const secrets = hooks.config.hooks.points[name].secrets;
  const started = performance.now();
  const base = { hook: name, uri: shownUri(uri), kind: "http" as const };
  let signed;
  try {
    signed = await post(hooks, uri, body, secrets);
  } catch (e) {
    const ms = Math.round(performance.now() - started);
    const timedOut = e instanceof DOMException && e.name === "TimeoutError";
    const problem = timedOut
      ? `no answer within ${hooks.config.hooks.httpTimeoutSec} s (AUTHSVC_HOOK_HTTP_TIMEOUT)`
      : `could not be reached: ${problemOf(e)}`;
    const signature = { verdict: "unknown" as const, forgedStatus: null };
    return { ...base, status: null, ms, answer: "", ok: false, problem, signature };
  }
  const ms = Math.round(performance.now() - started);
  const status = signed.res.status;
  const problem = status === 204
    ? null
    : status === 200 || status === 202
    ? judge(name, () => answerOf(signed.res.headers.get("content-type"), signed.body))
    : `answered HTTP ${status}, expected 200, 202 or 204`;

  let forgedStatus: number | null = null;
  try {
    forgedStatus = (await post(hooks, uri, body, [wrongSecret()])).res.status;
  } catch { /* unreachable the second time: the verdict stays unknown */ }
  let verdict: SignatureVerdict = "unknown";
  if (status === 401 || status === 403) verdict = "rejected_ours";
  else if (forgedStatus !== null && forgedStatus < 300) verdict = "not_checked";
  else if (status < 300 && forgedStatus !== null && forgedStatus >= 400 && forgedStatus < 500) {
    verdict = "verified";
  }
  return {
    ...base,
    status,
    ms,
    answer: signed.body.text.slice(0, SHOWN_ANSWER),
    ok: problem === null && verdict !== "not_checked",
    problem: problem ??
      (verdict === "not_checked"
        ? `accepted a call signed with a wrong secret (HTTP ${forgedStatus}): ` +
          "it does not verify the webhook-signature header"
        : null),
    signature: { verdict, forgedStatus },
  };
}
