// Stands in for auth-js's src/lib/types.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/types.js";
