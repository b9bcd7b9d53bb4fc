/** Third-party test peers: real servers and the official client, never mocks of our code. */
export { SMTPServer } from "smtp-server";
export { simpleParser } from "mailparser";
export { default as OidcProvider } from "oidc-provider";
export { AuthClient, GoTrueAdminApi, GoTrueClient } from "@supabase/auth-js";
import jsQRModule from "jsqr";
/** jsQR (a QR code reader); its CommonJS default export typed as the function it is. */
export const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ??
  jsQRModule) as unknown as typeof jsQRModule.default;
export { Webhook } from "standardwebhooks";
export { parse as parseYaml } from "yaml";
