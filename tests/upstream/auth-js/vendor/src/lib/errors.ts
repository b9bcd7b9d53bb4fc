// Stands in for auth-js's src/lib/errors.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/errors.js";
