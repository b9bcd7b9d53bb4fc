/**
 * The operators' console's routes (server/console/routes.ts `CONSOLE_ROUTES`)
 * as fuzz entries. They run against a second server process with the console
 * enabled (harness.ts), signed in as an operator through the console itself;
 * gen.ts sends the console's cookies and CSRF header, or wrong ones, or a
 * foreign Origin. The forwarding row (`ALL /console/api/gotrue/*`) has one
 * entry per admin call it forwards and two it must refuse. fuzz_test.ts fails
 * when a row of CONSOLE_ROUTES has no entry here.
 */
import { CONSOLE_ROUTES } from "../../server/console/routes.ts";
import {
  adminUserBody,
  code6,
  data,
  emailOf,
  fresh,
  type GenCtx,
  page,
  password,
  redirect,
  type RouteSpec,
} from "./routes.ts";
import { edgeString } from "./values.ts";

const FORWARD = "ALL /console/api/gotrue/*";
const G = "/console/api/gotrue";

const factorId = (g: GenCtx) => g.r.chance(0.7) ? g.me.factorId : g.r.uuid();

/** The console's routes. */
export const CONSOLE_SPECS: RouteSpec[] = [
  { name: "GET /console", method: "GET", path: "/console", auth: "console" },
  { name: "GET /console/", method: "GET", path: "/console/", auth: "console" },
  {
    name: "GET /console/assets/:name",
    method: "GET",
    path: "/console/assets/:name",
    auth: "console",
  },
  {
    name: "POST /console/api/login",
    method: "POST",
    path: "/console/api/login",
    auth: "console",
    body: { email: emailOf, password },
  },
  {
    name: "POST /console/api/mfa/challenge",
    method: "POST",
    path: "/console/api/mfa/challenge",
    auth: "console",
    body: { factor_id: factorId },
  },
  {
    name: "POST /console/api/mfa/verify",
    method: "POST",
    path: "/console/api/mfa/verify",
    auth: "console",
    body: {
      factor_id: factorId,
      challenge_id: (g) => g.r.chance(0.7) ? g.me.challengeId : g.r.uuid(),
      code: code6,
    },
  },
  {
    name: "POST /console/api/logout",
    method: "POST",
    path: "/console/api/logout",
    auth: "console",
    destructive: true,
  },
  { name: "GET /console/api/me", method: "GET", path: "/console/api/me", auth: "console" },
  {
    name: "GET /console/api/figures",
    method: "GET",
    path: "/console/api/figures",
    auth: "console",
  },
  { name: "GET /console/api/inbox", method: "GET", path: "/console/api/inbox", auth: "console" },
  {
    name: "POST /console/api/hooks/check",
    method: "POST",
    path: "/console/api/hooks/check",
    auth: "console",
  },
  {
    name: "GET /console/api/gotrue/admin/users",
    method: "GET",
    path: `${G}/admin/users`,
    row: FORWARD,
    auth: "console",
    query: {
      page,
      per_page: page,
      filter: ({ r }) => r.pick(["fz", "", edgeString(r)]),
      after: ({ r }) => r.pick([r.uuid(), edgeString(r)]),
    },
  },
  {
    name: "POST /console/api/gotrue/admin/users",
    method: "POST",
    path: `${G}/admin/users`,
    row: FORWARD,
    auth: "console",
    body: adminUserBody(),
  },
  {
    name: "GET /console/api/gotrue/admin/users/:user_id",
    method: "GET",
    path: `${G}/admin/users/:user_id`,
    row: FORWARD,
    auth: "console",
  },
  {
    name: "PUT /console/api/gotrue/admin/users/:user_id",
    method: "PUT",
    path: `${G}/admin/users/:user_id`,
    row: FORWARD,
    auth: "console",
    body: adminUserBody(),
    destructive: true,
  },
  {
    name: "DELETE /console/api/gotrue/admin/users/:user_id",
    method: "DELETE",
    path: `${G}/admin/users/:user_id`,
    row: FORWARD,
    auth: "console",
    destructive: true,
  },
  {
    name: "GET /console/api/gotrue/admin/users/:user_id/sessions",
    method: "GET",
    path: `${G}/admin/users/:user_id/sessions`,
    row: FORWARD,
    auth: "console",
  },
  {
    name: "DELETE /console/api/gotrue/admin/users/:user_id/factors/:factor_id",
    method: "DELETE",
    path: `${G}/admin/users/:user_id/factors/:factor_id`,
    row: FORWARD,
    auth: "console",
    destructive: true,
  },
  {
    name: "GET /console/api/gotrue/admin/audit",
    method: "GET",
    path: `${G}/admin/audit`,
    row: FORWARD,
    auth: "console",
    query: {
      page,
      per_page: page,
      query: ({ r }) => r.pick(["action:login", `author:${edgeString(r)}`, edgeString(r)]),
      since: ({ r }) => r.pick(["0000-01-01T00:00:00Z", "2020-01-01", edgeString(r)]),
      until: ({ r }) => r.pick(["9999-12-31T23:59:59-14:00", "2030-01-01", edgeString(r)]),
    },
  },
  {
    name: "POST /console/api/gotrue/invite",
    method: "POST",
    path: `${G}/invite`,
    row: FORWARD,
    auth: "console",
    body: { email: fresh, data },
    query: { redirect_to: redirect },
  },
  {
    name: "POST /console/api/gotrue/recover",
    method: "POST",
    path: `${G}/recover`,
    row: FORWARD,
    auth: "console",
    body: { email: emailOf },
    query: { redirect_to: redirect },
  },
  // Calls the console must not forward: 404, whatever the body or the session.
  {
    name: "POST /console/api/gotrue/admin/generate_link",
    method: "POST",
    path: `${G}/admin/generate_link`,
    row: FORWARD,
    auth: "console",
    body: { type: () => "magiclink", email: emailOf },
  },
  {
    name: "PUT /console/api/gotrue/user",
    method: "PUT",
    path: `${G}/user`,
    row: FORWARD,
    auth: "console",
    body: { password, data },
  },
];

/** The rows of the console's route table: `METHOD path`. */
export function consoleRows(): string[] {
  return CONSOLE_ROUTES.map(([method, path]) => `${method} ${path}`).sort();
}

/** The row a console entry covers. */
export function rowOf(spec: RouteSpec): string {
  return spec.row ?? `${spec.method} ${spec.path}`;
}
