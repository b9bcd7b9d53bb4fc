/** Who asked, read from the request, for the use cases (auth/deps.ts `RequestMeta`). */
import type { RequestMeta } from "../auth/deps.ts";
import { clientIp, type Ctx } from "./context.ts";

/** The client's IP, user agent and the request's abort signal. */
export function requestMeta(c: Ctx): RequestMeta {
  return { ip: clientIp(c), userAgent: c.req.header("user-agent"), signal: c.req.raw.signal };
}
