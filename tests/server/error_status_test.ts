/**
 * The status table of server/api/errors.ts: every error_code has a status,
 * the statuses are GoTrue's (internal/api/apierrors, read into
 * tests/conformance/gotrue_error_codes.json), and every status the api layer
 * sets itself on an ApiError is one the table lists. Needs no database.
 */
import assert from "node:assert/strict";
import ts from "typescript";
import {
  ApiError,
  AuthError,
  badRequest,
  type ErrorCode,
  errorResponse,
  ROUTE_STATUS,
  SITUATION_STATUS,
  STATUS,
  statusOf,
} from "../../server/api/errors.ts";
import type { Situation } from "../../server/auth/errors.ts";

const ROOT = new URL("../../", import.meta.url);

/** The members of the ErrorCode union, read from its source. */
function declaredCodes(): string[] {
  const text = Deno.readTextFileSync(new URL("server/auth/errors.ts", ROOT));
  const at = text.indexOf("export type ErrorCode");
  return [...text.slice(at, text.indexOf(";", at)).matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]);
}

const gotrue = JSON.parse(
  Deno.readTextFileSync(new URL("tests/conformance/gotrue_error_codes.json", ROOT)),
) as { codes: Record<string, number[]> };

/** Where our status for a GoTrue code is not one GoTrue answers it with, and why. */
const DIFFERS_FROM_GOTRUE: Record<string, string> = {
  mfa_verification_rejected: "429: too many attempts on one challenge (GoTrue: 403)",
  sms_send_failed: "500 when no SMS provider is configured (GoTrue: 422)",
};

Deno.test("every ErrorCode has an HTTP status, and the table has no other key", () => {
  const codes = declaredCodes();
  assert.ok(codes.length > 50, `read ${codes.length} codes from the ErrorCode union`);
  for (const code of codes) {
    const status = STATUS[code as ErrorCode];
    assert.ok(Number.isInteger(status), `${code} has no status`);
    assert.ok(status >= 400 && status <= 599, `${code}: ${status} is not an error status`);
  }
  assert.deepEqual(Object.keys(STATUS).sort(), [...codes].sort());
});

Deno.test("the table's statuses are GoTrue's, but for the differences listed", () => {
  for (const [code, status] of Object.entries(STATUS)) {
    const theirs = gotrue.codes[code];
    if (!theirs?.length) continue; // not a GoTrue code, or one GoTrue never answers
    if (code in DIFFERS_FROM_GOTRUE) {
      assert.ok(!theirs.includes(status), `${code}: no longer differs, drop it from the list`);
      continue;
    }
    assert.ok(theirs.includes(status), `${code}: ${status}, GoTrue answers ${theirs.join(", ")}`);
  }
  for (const [situation, codes] of Object.entries(SITUATION_STATUS)) {
    for (const [code, status] of Object.entries(codes)) {
      assert.notEqual(status, STATUS[code as ErrorCode], `${situation}/${code} repeats the table`);
      const theirs = gotrue.codes[code];
      if (theirs?.length && code !== "sms_send_failed" && code !== "captcha_failed") {
        assert.ok(theirs.includes(status), `${situation}/${code}: ${status} is not GoTrue's`);
      }
    }
  }
});

Deno.test("spot checks: the statuses a client sees for common refusals", () => {
  const status = (code: ErrorCode, situation?: Situation) =>
    statusOf(new AuthError(code, "x", { situation }));
  assert.equal(status("weak_password"), 422);
  assert.equal(status("invalid_credentials"), 400);
  assert.equal(status("bad_jwt"), 403);
  assert.equal(status("no_authorization"), 401);
  assert.equal(status("not_admin"), 403);
  assert.equal(status("otp_expired"), 403);
  assert.equal(status("session_not_found"), 403);
  assert.equal(status("refresh_token_not_found"), 400);
  assert.equal(status("refresh_token_already_used"), 400);
  assert.equal(status("over_request_rate_limit"), 429);
  assert.equal(status("over_email_send_rate_limit"), 429);
  assert.equal(status("email_exists"), 422);
  assert.equal(status("email_exists", "linking"), 400);
  assert.equal(status("user_banned"), 403);
  assert.equal(status("user_banned", "oauth"), 400);
  assert.equal(status("user_not_found"), 404);
  assert.equal(status("user_not_found", "linking"), 422);
  assert.equal(status("mfa_factor_not_found"), 404);
  assert.equal(status("mfa_factor_not_found", "challenge"), 422);
  assert.equal(status("validation_failed"), 422);
  assert.equal(status("validation_failed", "oauth"), 400);
  assert.equal(status("captcha_failed"), 400);
  assert.equal(status("captcha_failed", "upstream_failed"), 503);
  // a failed SMS send is 422 whatever the gateway did, as GoTrue (phone.go)
  assert.equal(status("sms_send_failed", "recipient_refused"), 422);
  assert.equal(status("sms_send_failed", "upstream_failed"), 422);
  assert.equal(status("sms_send_failed", "upstream_timeout"), 422);
  assert.equal(status("flow_state_expired"), 422);
  assert.equal(status("current_password_required"), 400);
  assert.equal(status("current_password_invalid"), 400);
  // a situation that does not concern the code leaves the table's status
  assert.equal(status("weak_password", "oauth"), 422);
  // an ApiError's own status wins
  assert.equal(statusOf(new ApiError(401, "insufficient_aal", "x")), 401);
  assert.equal(statusOf(badRequest("x")), 400);
});

Deno.test("the error body and headers: code, error_code, msg, details, Retry-After", async () => {
  const weak = new AuthError("weak_password", "Password is too short", {
    details: { weak_password: { reasons: ["length"] } },
  });
  const r = errorResponse(weak, "req-1");
  assert.equal(r.status, 422);
  assert.equal(r.headers.get("x-request-id"), "req-1");
  assert.equal(r.headers.get("retry-after"), null);
  assert.deepEqual(await r.json(), {
    code: 422,
    error_code: "weak_password",
    msg: "Password is too short",
    weak_password: { reasons: ["length"] },
  });
  const limited = errorResponse(
    new AuthError("over_email_send_rate_limit", "wait", { retryAfterSec: 17 }),
  );
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "17");
  assert.equal((await limited.json()).code, 429);
});

Deno.test("an AuthError keeps its cause", () => {
  const underneath = new Error("connection refused");
  const e = new AuthError("email_send_failed", "Error sending confirmation email", {
    cause: underneath,
  });
  assert.equal(e.cause, underneath);
  assert.equal(new AuthError("not_found", "x").cause, undefined);
  assert.ok(!("cause" in new AuthError("not_found", "x")), "no cause member when none is given");
});

/** Every `new ApiError(status, "code", ...)`, badRequest and unprocessable under server/. */
function explicitStatuses(): { code: string; status: number; at: string }[] {
  const out: { code: string; status: number; at: string }[] = [];
  const walk = (dir: URL) => {
    for (const e of Deno.readDirSync(dir)) {
      const u = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
      if (e.isDirectory) walk(u);
      else if (e.name.endsWith(".ts")) scan(u);
    }
  };
  const str = (n: ts.Node | undefined) =>
    n && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : undefined;
  const scan = (file: URL) => {
    const text = Deno.readTextFileSync(file);
    const sf = ts.createSourceFile(file.pathname, text, ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node) =>
      `${file.pathname.slice(ROOT.pathname.length)}:${
        sf.getLineAndCharacterOfPosition(n.getStart()).line + 1
      }`;
    const visit = (node: ts.Node) => {
      if (ts.isNewExpression(node) || ts.isCallExpression(node)) {
        const name = ts.isIdentifier(node.expression) ? node.expression.text : "";
        const args = node.arguments ?? ts.factory.createNodeArray();
        if (name === "ApiError") {
          const status = args[0] && ts.isNumericLiteral(args[0]) ? Number(args[0].text) : NaN;
          out.push({ code: str(args[1]) ?? "?", status, at: at(node) });
        } else if (name === "badRequest" || name === "unprocessable") {
          out.push({
            code: args.length < 2 ? "validation_failed" : str(args[1]) ?? "?",
            status: name === "badRequest" ? 400 : 422,
            at: at(node),
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  };
  walk(new URL("server/", ROOT));
  return out;
}

Deno.test("every status the api layer sets itself is in the table or in ROUTE_STATUS", () => {
  const sites = explicitStatuses();
  assert.ok(sites.length > 50, `found ${sites.length} ApiError sites`);
  const listed = new Set(ROUTE_STATUS.map((r) => `${r.code} ${r.status}`));
  const unused = new Set(listed);
  for (const s of sites) {
    assert.ok(
      s.at.startsWith("server/api/") || s.at.startsWith("server/app.ts"),
      `${s.at}: ApiError carries an HTTP status; outside server/api/ throw AuthError`,
    );
    if (s.code === "?") continue; // a code passed through (HTTPException in app.ts)
    if (Number.isNaN(s.status)) continue; // ditto, a status passed through
    const key = `${s.code} ${s.status}`;
    unused.delete(key);
    assert.ok(
      STATUS[s.code as ErrorCode] === s.status || listed.has(key),
      `${s.at}: ${s.code} answered ${s.status}; the table says ${
        STATUS[s.code as ErrorCode]
      } and ROUTE_STATUS does not list it`,
    );
  }
  assert.deepEqual([...unused], [], "ROUTE_STATUS rows no route uses");
});
