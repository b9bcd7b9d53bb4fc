/**
 * A local stand-in for Have I Been Pwned's Pwned Passwords range API
 * (https://haveibeenpwned.com/API/v3#SearchingPwnedPasswordsByRange), checking
 * the documented request format: `GET /range/{first 5 hex digits of the
 * SHA-1}`, upper or lower case, a User-Agent (the API refuses requests
 * without one), and `Add-Padding: true` honoured with count-0 lines.
 *
 * It answers `SUFFIX:COUNT` lines (CRLF-separated, as the API does) for the
 * breached passwords it is given, plus padding. Every request is recorded so
 * a test can check that nothing but the prefix left the server.
 */

/** One request the fake received. */
export interface HibpRequest {
  method: string;
  path: string;
  userAgent: string | null;
  addPadding: string | null;
}

/** A running fake. */
export interface HibpFake {
  url: string;
  requests: HibpRequest[];
  /** Answer every request with this status from now on (0: answer normally). */
  failWith: number;
  close(): Promise<void>;
}

async function sha1(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("")
    .toUpperCase();
}

/**
 * Starts the fake. `breached` maps passwords to their breach counts; a count
 * of 0 lists the suffix as padding would (not breached).
 */
export async function startHibpFake(breached: Record<string, number>): Promise<HibpFake> {
  const hashes = new Map<string, number>();
  for (const [pw, n] of Object.entries(breached)) hashes.set(await sha1(pw), n);
  const fake: HibpFake = { url: "", requests: [], failWith: 0, close: async () => {} };
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) => {
      const path = new URL(req.url).pathname;
      fake.requests.push({
        method: req.method,
        path,
        userAgent: req.headers.get("user-agent"),
        addPadding: req.headers.get("add-padding"),
      });
      if (fake.failWith) return new Response("unavailable", { status: fake.failWith });
      const m = /^\/range\/([0-9A-Fa-f]{5})$/.exec(path);
      if (req.method !== "GET" || !m) {
        return new Response("The hash prefix was not in a valid format", { status: 400 });
      }
      if (!req.headers.get("user-agent")) return new Response("Forbidden", { status: 403 });
      const prefix = m[1].toUpperCase();
      const lines: string[] = [];
      for (const [h, n] of hashes) if (h.startsWith(prefix)) lines.push(`${h.slice(5)}:${n}`);
      if (req.headers.get("add-padding") === "true") {
        for (let i = 0; i < 5; i++) {
          const pad = Array.from(
            crypto.getRandomValues(new Uint8Array(18)),
            (b) => b.toString(16).padStart(2, "0"),
          ).join("").slice(0, 35).toUpperCase();
          lines.push(`${pad}:0`);
        }
      }
      return new Response(lines.join("\r\n"), { headers: { "content-type": "text/plain" } });
    },
  );
  fake.url = `http://127.0.0.1:${server.addr.port}`;
  fake.close = async () => {
    ac.abort();
    await server.finished;
  };
  return fake;
}
