/**
 * JWT secrets published in example files, documentation and test set-ups
 * that people copy: whoever knows one can sign `service_role` tokens for a
 * server that uses it. jwt.ts refuses each of them as JWT_SECRET (and as
 * a symmetric key of JWT_KEYS) unless JWT_ALLOW_WEAK_SECRET says the server
 * is a development one (docs/security.md).
 *
 * Collected from the repositories' current files and their history:
 * - supabase/auth (GoTrue): `example.env`, `example.docker.env`, README.md,
 *   `hack/test.env`, `hack/test_asymmetric.env`;
 * - supabase/supabase: `docker/.env.example`, the self-hosting example whose
 *   `ANON_KEY` and `SERVICE_ROLE_KEY` are signed with its JWT_SECRET;
 * - supabase/cli: the local stack's default secret (`pkg/config/apikeys.go`,
 *   printed by `supabase status`; its default anon and service_role keys are
 *   signed with it) and the secrets of its tests and recorded fixtures;
 * - this repository's former `.env.example`.
 * GoTrue's PEM-encoded private keys once used as GOTRUE_JWT_SECRET in its
 * test set-ups (`hack/test.es256.env`, `hack/test.rs256.env`) are not
 * listed: multi-line keys are no HS256 secret anyone types in.
 */
export const PUBLISHED_JWT_SECRETS: readonly string[] = [
  // this repository's former .env.example
  "local-development-secret-change-me-0123456789",
  // supabase/supabase docker/.env.example (self-hosting); also supabase/auth example.docker.env
  "your-super-secret-jwt-token-with-at-least-32-characters-long",
  // supabase/cli: the local stack's default, and its tests'
  "super-secret-jwt-token-with-at-least-32-characters-long",
  "super-secret-jwt-token-with-at-least-32-characters",
  "test-jwt-secret-with-at-least-32-characters",
  "super-secret-jwt",
  // supabase/cli: recorded Management API answers in its end-to-end fixtures
  "EH9SYrAOLy4wUwRSts5kU5oZfiqFLy3+v+a1EAwFpKRbqxzPldJ5wMoiySHJiDmyWrMZXL5yK/9V7XkCtRdU0Q==",
  "r0/2ujDmPfvUIbzLHvYV1Uz58kitPHk55HZt/wJ8ULYVsNKQ7huFluWj7LL+yi8nTv+yUVPEHFtsqCiHlR1lRw==",
  "wYu1Y5zcq5XMI/BHlkIl6p9LkFCuWMLyiAVVoKKcIKJkp2un+UF9KkNth/4YXd2nLagAXtJ0wq/DaixwsuUfww==",
  // supabase/auth example.env (now and before), README.md, hack/*.env
  "CHANGE-THIS! VERY IMPORTANT!",
  "m1HIQZxYScoiKkTp1DTv45WFiyt7r92p",
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6ImpncXF1anlraXlsa2Z6dmV0dHN5Iiwicm9sZSI6ImFub24iLCJpYXQiOjE3Mjk0NDI5OTMsImV4cCI6MjA0NTAxODk5M30.L_HB-_P0HthlNo0U03xOm9qIaezVR-FGNE2zokt1Kd0",
  "X4dNv2oLvR7BnqmYk07Fi2NG2frvL2sxNQ9hxBJ65eDkFQ4He6qHrLJB9UrjYIZ1Rk0/yeh4vmihlCtxpFTeVQ==",
  "supersecretvalue",
  "testsecret",
];

/** Whether `bytes` (a secret or a symmetric JWK's key) is one of the published secrets. */
export function isPublishedSecret(bytes: string | Uint8Array): boolean {
  const text = typeof bytes === "string"
    ? bytes
    : new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  return PUBLISHED_JWT_SECRETS.includes(text);
}
