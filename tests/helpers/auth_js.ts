/** The official client (@supabase/auth-js) pointed at a test server, keeping its session in memory. */
import { GoTrueClient } from "./deps.ts";

/** An auth-js client with in-memory storage (no browser), its own storage key, no auto refresh. */
export function authJsClient(
  url: string,
  flowType: "implicit" | "pkce" = "implicit",
): GoTrueClient {
  const store = new Map<string, string>();
  return new GoTrueClient({
    url,
    flowType,
    autoRefreshToken: false,
    persistSession: true,
    detectSessionInUrl: false,
    storageKey: `sb-${crypto.randomUUID()}`,
    storage: {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    },
  });
}
