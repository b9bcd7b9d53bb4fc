/**
 * A local auth-hook endpoint: it verifies every request's Standard Webhooks
 * signature with the reference library (`standardwebhooks`, npm), records the
 * payloads, and answers with what the test's handler returns.
 */
import { Webhook } from "./deps.ts";

/** One request the hook received (signature already verified). */
export interface HookCall {
  path: string;
  payload: Record<string, unknown>;
  headers: Record<string, string>;
}

/** A running hook endpoint. */
export interface HookServer {
  url: string;
  /** The secret to configure: v1,whsec_<base64>. */
  secret: string;
  calls: HookCall[];
  /** Requests whose signature did not verify (answered 401). */
  badSignatures: number;
  close(): Promise<void>;
}

/** A handler's answer: a JSON body (status 200), or a Response, or a promise of either. */
export type HookHandler = (
  path: string,
  payload: Record<string, unknown>,
) => unknown | Response | Promise<unknown | Response>;

/** A fresh Standard Webhooks secret in GoTrue's setting form. */
export function newWebhookSecret(): string {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  return `v1,whsec_${btoa(String.fromCharCode(...raw))}`;
}

/** Starts the endpoint on 127.0.0.1, port 0. */
export function startHookServer(handler: HookHandler): HookServer {
  const secret = newWebhookSecret();
  const wh = new Webhook(secret.slice("v1,".length));
  const ac = new AbortController();
  const hook: HookServer = {
    url: "",
    secret,
    calls: [],
    badSignatures: 0,
    close: async () => {},
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async (req) => {
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      let payload: Record<string, unknown>;
      try {
        payload = wh.verify(body, headers) as Record<string, unknown>;
      } catch {
        hook.badSignatures++;
        return new Response("bad signature", { status: 401 });
      }
      const path = new URL(req.url).pathname;
      hook.calls.push({ path, payload, headers });
      const out = await handler(path, payload);
      if (out instanceof Response) return out;
      if (out === undefined) return new Response(null, { status: 204 });
      return Response.json(out);
    },
  );
  hook.url = `http://127.0.0.1:${server.addr.port}`;
  hook.close = async () => {
    ac.abort();
    await server.finished;
  };
  return hook;
}
