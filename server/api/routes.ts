/**
 * Routing in one place: every endpoint group registers its routes here, in
 * this order. Add one line per group.
 */
import type { Hono } from "../../deps.ts";
import type { Services } from "../services.ts";
import type { AppEnv } from "./context.ts";
import { healthRoutes } from "./health.ts";
import { auditRoutes } from "./audit.ts";
import { factorRoutes } from "./factors.ts";
import { signupRoutes } from "./signup.ts";
import { tokenRoutes } from "./token.ts";
import { userRoutes } from "./user.ts";
import { logoutRoutes } from "./logout.ts";
import { adminRoutes } from "./admin.ts";
import { phoneRoutes } from "./phone.ts";

/** A function that adds one endpoint group's routes. */
export type RouteGroup = (app: Hono<AppEnv>, s: Services) => void;

export const ROUTE_GROUPS: RouteGroup[] = [
  healthRoutes,
  auditRoutes,
  factorRoutes,
  signupRoutes,
  tokenRoutes,
  userRoutes,
  logoutRoutes,
  adminRoutes,
  phoneRoutes,
];
