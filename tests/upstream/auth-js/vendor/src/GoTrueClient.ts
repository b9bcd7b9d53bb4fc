// Stands in for auth-js's src/GoTrueClient.ts (see index.ts): the same class the package root
// exports (a CommonJS module's default import is its exports object, whose default is the class).
import { GoTrueClient } from "@supabase/auth-js";
export default GoTrueClient;
