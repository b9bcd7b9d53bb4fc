// Stands in for auth-js's src/lib/local-storage.ts (see ../index.ts).
export * from "@supabase/auth-js/dist/main/lib/local-storage.js";
