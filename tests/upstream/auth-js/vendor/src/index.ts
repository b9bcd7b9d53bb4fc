// Stands in for auth-js's src/index.ts: the published package of deno.json (dist/main, the build
// the package's "main" names, so every class here is the one the package root exports).
export * from "@supabase/auth-js";
