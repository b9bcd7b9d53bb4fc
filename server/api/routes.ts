/**
 * Routing in one place: every endpoint group registers its routes here, in
 * this order. Add one line per group.
 */
import type { Hono } from "../../deps.ts";
import type { Services } from "../services.ts";
import type { AppEnv } from "./context.ts";
import { healthRoutes } from "./health.ts";
import { externalRoutes } from "./external.ts";
import { auditRoutes } from "./audit.ts";
import { factorRoutes } from "./factors.ts";
import { signupRoutes } from "./signup.ts";
import { tokenRoutes } from "./token.ts";
import { userRoutes } from "./user.ts";
import { logoutRoutes } from "./logout.ts";
import { adminRoutes } from "./admin.ts";
import { adminSessionRoutes } from "./admin_sessions.ts";
import { phoneRoutes } from "./phone.ts";
import { verifyRoutes } from "./verify.ts";
import { otpRoutes } from "./otp.ts";
import { magiclinkRoutes } from "./magiclink.ts";
import { recoverRoutes } from "./recover.ts";
import { resendRoutes } from "./resend.ts";
import { inviteRoutes } from "./invite.ts";
import { generateLinkRoutes } from "./generate_link.ts";
import { reauthenticateRoutes } from "./reauthenticate.ts";
import { emailHooks } from "./email_hooks.ts";
import { samlRoutes } from "./saml.ts";
import { idTokenRoutes } from "./id_token.ts";

/** A function that adds one endpoint group's routes. */
export type RouteGroup = (app: Hono<AppEnv>, s: Services) => void;

export const ROUTE_GROUPS: RouteGroup[] = [
  healthRoutes,
  externalRoutes,
  auditRoutes,
  factorRoutes,
  signupRoutes,
  tokenRoutes,
  userRoutes,
  logoutRoutes,
  adminRoutes,
  adminSessionRoutes,
  phoneRoutes,
  verifyRoutes,
  otpRoutes,
  magiclinkRoutes,
  recoverRoutes,
  resendRoutes,
  inviteRoutes,
  generateLinkRoutes,
  reauthenticateRoutes,
  samlRoutes,
  emailHooks,
  idTokenRoutes,
];
