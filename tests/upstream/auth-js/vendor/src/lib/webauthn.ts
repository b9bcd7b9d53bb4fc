// Stands in for auth-js's src/lib/webauthn.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/webauthn.js";
