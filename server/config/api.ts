/**
 * The site and the HTTP API: where the server listens, the URL it is reached
 * at (the JWT `iss`), the site whose host `redirect_to` may name, request
 * limits, and the operators' console.
 */
import type { ConfigReader, SectionDoc } from "./reader.ts";

export const API_SECTION: SectionDoc = {
  title: "Site and HTTP API",
  about:
    "Where the server listens and is reached, which redirects it allows ([security.md](security.md)) and the limits of a request.",
};

/** The HTTP API's settings. */
export interface ApiConfig {
  host: string;
  port: number;
  externalUrl: string;
  requestIdHeader: string;
  maxBodyBytes: number;
  /** Users whose GET /user answer a process keeps (api/user_profile.ts); 0: none. */
  userCacheSize: number;
  /** A request's database work is given up after this long (504 request_timeout); 0: never. */
  maxRequestDurationMs: number;
}

/** The site, the API and the console: the top-level part of `Config` this section reads. */
export interface SiteSettings {
  siteUrl: string;
  uriAllowList: string[];
  disableSignup: boolean;
  api: ApiConfig;
  /** The operators' web console under /console/ (docs/console.md). */
  console: { enabled: boolean };
}

export function readSiteSettings(r: ConfigReader): SiteSettings {
  return {
    siteUrl: r.url("SITE_URL", {
      required: true,
      doc: "base URL of the site; its host is an allowed redirect_to",
    }),
    uriAllowList: r.list("URI_ALLOW_LIST", {
      doc: "further allowed redirect_to URLs, with * globs",
    }),
    disableSignup: r.bool("DISABLE_SIGNUP", { doc: "only invites create users" }),
    api: {
      host: r.string("API_HOST", { default: "0.0.0.0", doc: "listen address" }),
      port: r.int("PORT", {
        noPrefix: true,
        aliases: ["AUTHSVC_API_PORT"],
        default: 8081,
        min: 0,
        max: 65535,
        doc: "listen port",
      }),
      externalUrl: r.url("API_EXTERNAL_URL", {
        required: true,
        doc: "URL at which this server is reachable; the JWT iss",
      }),
      requestIdHeader: r.string("REQUEST_ID_HEADER", {
        doc: "incoming header to inherit the request id from",
      }),
      maxBodyBytes: r.int("API_MAX_BODY_BYTES", {
        default: 1 << 20,
        min: 1024,
        doc: "largest request body accepted",
      }),
      userCacheSize: r.int("API_USER_CACHE_SIZE", {
        default: 10_000,
        min: 0,
        doc:
          "users whose GET /user answer a process keeps, revision-checked (2 KB each on average); 0: none",
      }),
      maxRequestDurationMs: r.seconds("API_MAX_REQUEST_DURATION", {
        default: 10,
        doc: "a request's database work is given up after this long: 504 request_timeout; 0: never",
      }) * 1000,
    },
    console: {
      enabled: r.bool("CONSOLE_ENABLED", {
        doc: "serve the operators' web console under /console/",
      }),
    },
  };
}
