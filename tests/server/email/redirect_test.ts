import assert from "node:assert/strict";
import { isRedirectAllowed, verifyRedirectTo } from "../../../server/auth/redirect.ts";

const config = {
  siteUrl: "https://site.example.com",
  uriAllowList: [
    "https://*.preview.example.org",
    "https://app.example.net/**",
    "http://localhost:3000/auth/*",
    "myapp://callback",
  ],
};

Deno.test("redirect_to: SITE_URL's host and allow-list globs are accepted", () => {
  for (
    const ok of [
      "https://site.example.com",
      "https://site.example.com/welcome?x=1#y",
      "https://SITE.Example.COM/Mixed",
      "https://pr-12.preview.example.org",
      "https://pr-12.preview.example.org/",
      "https://app.example.net/",
      "https://app.example.net/deep/path/here?q=1",
      "http://localhost:3000/auth/callback",
      "myapp://callback",
    ]
  ) assert.ok(isRedirectAllowed(config, ok), ok);
  // An http SITE_URL (local development) accepts its host over http and https.
  const local = { siteUrl: "http://localhost:3000", uriAllowList: [] };
  assert.ok(isRedirectAllowed(local, "http://localhost:3000/cb"));
  assert.ok(isRedirectAllowed(local, "https://localhost:3000/cb"));
  // An allow-list entry written with http:// is the operator's explicit choice.
  const listed = {
    siteUrl: "https://site.example.com",
    uriAllowList: ["http://site.example.com/**"],
  };
  assert.ok(isRedirectAllowed(listed, "http://site.example.com/cb"));
});

Deno.test("redirect_to: open-redirect attempts fall back to SITE_URL", () => {
  for (
    const bad of [
      "https://evil.example",
      "//evil.example",
      "/relative/path",
      "https://site.example.com@evil.example",
      "https://site.example.com:pass@evil.example/",
      "https://evil.example@site.example.com/",
      "https://evil.example\\@site.example.com",
      "https://site.example.com\\.evil.example",
      "https://site.example.com.evil.example",
      "https://site.example.com%2F@evil.example",
      "https://site.example.com%2eevil.example",
      "https://site.example.com:8443/",
      "HTTPS://EVIL.EXAMPLE/",
      "javascript:alert(document.domain)//https://site.example.com",
      "JaVaScRiPt:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      " https://site.example.com",
      "https://site.example.com/\nLocation: https://evil.example",
      "https://a.b.preview.example.org",
      "https://preview.example.org",
      "https://evilpreview.example.org",
      "https://app.example.net.evil.example/x",
      "http://app.example.net/x",
      "https://app.example.net:444/x",
      "http://localhost:3000/auth/callback/extra",
      "http://localhost:3000/other",
      "http://localhost:3001/auth/callback",
      "myapp://callback.evil",
      "otherapp://callback",
      "https:evil.example",
      "https:/\\evil.example",
      "https://evil.example#@site.example.com",
      "https://evil.example?@site.example.com",
      "https://site.example.com%40evil.example",
      "https://site.example.com%09.evil.example",
      "https://\u0455ite.example.com", // Cyrillic "s"
      "https://evil.example/https://site.example.com",
      "http://site.example.com/welcome", // plain text on an https site: tokens in clear
      "http://site.example.com:443/",
      "vbscript:msgbox(1)",
      "file:///etc/passwd",
      "myapp://callback@evil",
      "",
    ]
  ) {
    assert.equal(isRedirectAllowed(config, bad), false, bad);
    assert.equal(verifyRedirectTo(config, bad), config.siteUrl);
  }
  assert.equal(verifyRedirectTo(config, undefined), config.siteUrl);
});
