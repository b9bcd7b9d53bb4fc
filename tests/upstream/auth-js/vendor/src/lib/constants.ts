// Stands in for auth-js's src/lib/constants.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/constants.js";
