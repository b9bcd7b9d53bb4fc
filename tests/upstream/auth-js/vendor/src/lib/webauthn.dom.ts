// Stands in for auth-js's src/lib/webauthn.dom.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/webauthn.dom.js";
