/**
 * `healthcheck`: asks this server's own `GET /health` and exits 0 when it
 * answers 200, 1 otherwise, for container health checks on images without
 * curl or wget (`HEALTHCHECK CMD ["authsvc", "healthcheck"]`). It reads only
 * the listen address (PORT, AUTHSVC_API_HOST, or their GoTrue names), so it
 * works with whatever else the configuration holds; `--url` overrides it.
 */

/** The URL of /health for a listen address. */
export function healthUrl(env: Record<string, string | undefined>): string {
  const port = env.PORT?.trim() || env.AUTHSVC_API_PORT?.trim() || env.GOTRUE_PORT?.trim() ||
    env.GOTRUE_API_PORT?.trim() || "8081";
  let host = env.AUTHSVC_API_HOST?.trim() || env.GOTRUE_API_HOST?.trim() || "127.0.0.1";
  // A wildcard listen address is reached on the loopback interface.
  if (host === "0.0.0.0" || host === "") host = "127.0.0.1";
  if (host === "::" || host === "[::]") host = "[::1]";
  else if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  return `http://${host}:${port}/health`;
}

/** Runs the check; returns the exit code and prints one line. */
export async function healthcheck(url: string, timeoutMs = 5000): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await res.text();
    if (res.status === 200) {
      console.log(`healthy: ${url}`);
      return 0;
    }
    console.error(`unhealthy: ${url} answered ${res.status} ${body.slice(0, 200)}`);
    return 1;
  } catch (e) {
    console.error(`unhealthy: ${url}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
