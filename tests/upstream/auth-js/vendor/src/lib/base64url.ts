// Stands in for auth-js's src/lib/base64url.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/base64url.js";
