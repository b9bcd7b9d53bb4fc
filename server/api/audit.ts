/**
 * GET /admin/audit (admin only): the audit log, newest first, paged like
 * /admin/users (`page`, `per_page`; total in `X-Total-Count`, `Link` with
 * rel="next" and rel="last"). `query=author:<text>`, `action:<text>` or
 * `type:<text>` narrows it (case-insensitive substring), as in GoTrue.
 */
import { isAuditScope } from "../auth/audit.ts";
import type { Services } from "../services.ts";
import type { Ctx } from "./context.ts";
import { isUuid } from "./input.ts";
import { badRequest } from "./errors.ts";

/** The longest `query` accepted (it is a substring filter, like /admin/users' `filter`). */
const MAX_QUERY = 255;

function positiveInt(v: string | undefined, name: string, def: number, max: number): number {
  if (v === undefined || v === "") return def;
  if (!/^\d+$/.test(v) || Number(v) < 1) {
    throw badRequest(`${name} must be a positive integer, got "${v.slice(0, 40)}"`);
  }
  return Math.min(Number(v), max);
}

/** Our filters beyond GoTrue's `query` (the console uses them; docs/console.md). */
const FILTER_PARAMS = ["user_id", "actor", "action", "since", "until"] as const;

/**
 * `since` / `until`: an ISO 8601 time in the years 0001 to 9999 (UTC). JavaScript reads year
 * 0000 (and a zone offset can carry 0001 or 9999 across), PostgreSQL's timestamptz has no year
 * 0 and its text form no year beyond 9999 in ISO notation: such a time would be a 500.
 */
function auditTime(c: Ctx, name: "since" | "until"): Date | undefined {
  const v = c.req.query(name);
  if (!v) return undefined;
  const d = new Date(v);
  const year = d.getUTCFullYear();
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime()) || year < 1 || year > 9999) {
    throw badRequest(
      `${name} must be an ISO 8601 time between the years 0001 and 9999, got "${v.slice(0, 40)}"`,
    );
  }
  return d;
}

function auditText(c: Ctx, name: "actor" | "action"): string | undefined {
  const v = c.req.query(name);
  if (!v) return undefined;
  if (v.length > MAX_QUERY) {
    throw badRequest(`${name} is too long (at most ${MAX_QUERY} characters)`);
  }
  return v;
}

function auditFilters(c: Ctx) {
  const userId = c.req.query("user_id") || undefined;
  if (userId !== undefined && !isUuid(userId)) throw badRequest("user_id must be a UUID");
  return {
    userId,
    actor: auditText(c, "actor"),
    action: auditText(c, "action"),
    since: auditTime(c, "since"),
    until: auditTime(c, "until"),
  };
}

/** GET /admin/audit. */
export async function auditLog(c: Ctx, s: Services): Promise<Response> {
  const page = positiveInt(c.req.query("page"), "page", 1, 1_000_000);
  const perPage = positiveInt(c.req.query("per_page"), "per_page", 50, 1000);
  let search: { scope: string; text: string } | undefined;
  const q = c.req.query("query") ?? "";
  if (q.length > MAX_QUERY) {
    throw badRequest(`query is too long (at most ${MAX_QUERY} characters)`);
  }
  if (q) {
    const i = q.indexOf(":");
    const scope = i > 0 ? q.slice(0, i) : "";
    if (!isAuditScope(scope)) {
      throw badRequest(
        `Invalid query scope: "${q.slice(0, 60)}" (use author:, action: or type:)`,
      );
    }
    search = { scope, text: q.slice(i + 1) };
  }
  const filters = auditFilters(c);
  const { total, rows } = await s.audit.list({ search, filters, page, perPage });
  const last = Math.max(1, Math.ceil(total / perPage));
  // Built from the parsed parameters only (never by copying the request's query string, which
  // would make a 20 kB query a 40 kB header), so the header stays a few hundred bytes.
  const path = new URL(c.req.url).pathname;
  const link = (p: number, rel: string) => {
    // As GoTrue: the request's own parameters with the page set, so per_page only when given.
    const u = new URLSearchParams({ page: String(p) });
    if (c.req.query("per_page") !== undefined) u.set("per_page", String(perPage));
    if (q) u.set("query", q);
    for (const k of FILTER_PARAMS) {
      const v = c.req.query(k);
      if (v) u.set(k, v);
    }
    return `<${path}?${u}>; rel="${rel}"`;
  };
  const links = [];
  if (page < last) links.push(link(page + 1, "next"));
  links.push(link(last, "last"));
  c.header("X-Total-Count", String(total));
  c.header("Link", links.join(", "));
  return c.json(rows.map((r) => ({
    id: r.id,
    payload: r.payload,
    created_at: r.created_at,
    ip_address: r.ip_address,
  })));
}
