/**
 * The client IP used for rate limits, audit entries and logs: the socket's
 * address, or, only with SECURITY_SB_FORWARDED_FOR_ENABLED, the first address
 * of the proxy header that setting names (`Authsvc-Proxy-Forwarded-For`, or
 * GoTrue's `Sb-Forwarded-For` when it was set under GoTrue's name: config/security.ts
 * `forwardedForHeader`) when it is a valid IPv4 or IPv6 address. The header
 * is trusted only when that setting says so: anybody can send it.
 */
import { isIP } from "node:net";
import type { Config } from "../config/mod.ts";

/** Strips `[v6]:port`, `v4:port` and zone-less brackets; returns "" when not an IP. */
export function parseIp(text: string): string {
  let v = text.trim();
  if (!v) return "";
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(v);
  if (bracket) v = bracket[1];
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(":"));
  return isIP(v) ? v : "";
}

/**
 * The client IP of one request.
 *
 * @param config the server's settings
 * @param headers the request headers
 * @param remoteAddr the socket's address ("" when unknown)
 * @returns an IP address, or "" when none is known
 */
export function resolveClientIp(config: Config, headers: Headers, remoteAddr: string): string {
  const trusted = config.security.forwardedForHeader;
  if (trusted) {
    const first = (headers.get(trusted) ?? "").split(",")[0];
    const ip = parseIp(first);
    if (ip) return ip;
  }
  return parseIp(remoteAddr) || remoteAddr;
}
