/** Third-party test peers: real servers and the official client, never mocks of our code. */
export { SMTPServer } from "smtp-server";
export { simpleParser } from "mailparser";
export { default as OidcProvider } from "oidc-provider";
export { AuthClient, GoTrueAdminApi, GoTrueClient } from "@supabase/auth-js";
