// Stands in for auth-js's src/lib/helpers.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/helpers.js";
