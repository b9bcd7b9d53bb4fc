/** The confirmation rule against pre-account takeover (server/auth/confirm.ts), as a pure decision. */
import assert from "node:assert/strict";
import {
  isUnproven,
  planConfirmation,
  signupClaimOf,
  signupTokenData,
} from "../../../server/auth/confirm.ts";
import type { UserRow } from "../../../server/auth/users.ts";

const NOW = new Date("2026-01-02T03:04:05Z");

function user(over: Partial<UserRow> = {}): UserRow {
  return {
    id: "00000000-0000-4000-8000-000000000001",
    aud: "authenticated",
    role: "authenticated",
    email: "owner@example.com",
    encrypted_password: "$2a$10$squatter",
    email_confirmed_at: null,
    invited_at: null,
    confirmation_sent_at: null,
    recovery_sent_at: null,
    email_change: null,
    email_change_sent_at: null,
    email_change_confirm_status: 0,
    phone: null,
    phone_confirmed_at: null,
    phone_change: null,
    phone_change_sent_at: null,
    reauthentication_sent_at: null,
    last_sign_in_at: null,
    raw_app_meta_data: { provider: "email", providers: ["email", "github"] },
    raw_user_meta_data: { display_name: "Support" },
    banned_until: null,
    deleted_at: null,
    is_anonymous: false,
    created_at: NOW,
    updated_at: NOW,
    ...over,
  };
}

Deno.test("confirm rule: any other path keeps no password, metadata nor other identity of an unproven account", () => {
  const plan = planConfirmation(user({ phone: "15550001111" }), {
    channels: ["email"],
    signup: null,
    now: NOW,
  });
  assert.equal(plan.fields.email_confirmed_at, NOW);
  assert.equal(plan.fields.encrypted_password, null);
  assert.deepEqual(plan.fields.raw_user_meta_data, {});
  assert.equal(plan.fields.phone, null, "the unconfirmed phone goes too");
  assert.deepEqual(plan.fields.raw_app_meta_data, { provider: "email", providers: ["email"] });
  assert.deepEqual(plan.reset, { keepProviders: ["email"] });
});

Deno.test("confirm rule: a password set in the confirming request is kept", () => {
  const plan = planConfirmation(user(), {
    channels: ["email"],
    signup: null,
    password: "$2a$10$owner",
    now: NOW,
  });
  assert.equal(plan.fields.encrypted_password, "$2a$10$owner");
});

Deno.test("confirm rule: the sign-up's own confirmation keeps what that sign-up set", () => {
  const own = planConfirmation(user(), { channels: ["email"], signup: {}, now: NOW });
  assert.equal(own.fields.encrypted_password, "$2a$10$squatter");
  assert.deepEqual(own.fields.raw_user_meta_data, { display_name: "Support" });
  const dup = planConfirmation(user(), {
    channels: ["email"],
    signup: { password: "$2a$10$owner", data: { name: "O" } },
    now: NOW,
  });
  assert.equal(dup.fields.encrypted_password, "$2a$10$owner");
  assert.deepEqual(dup.fields.raw_user_meta_data, { name: "O" });
  const provider = planConfirmation(user({ encrypted_password: null }), {
    channels: ["email"],
    signup: { provider: "github" },
    now: NOW,
  });
  assert.deepEqual(provider.reset, { keepProviders: ["github"] });
});

Deno.test("confirm rule: an account with a confirmed address keeps everything", () => {
  const proven = user({ phone: "15550001111", phone_confirmed_at: NOW });
  const plan = planConfirmation(proven, { channels: ["email"], signup: null, now: NOW });
  assert.deepEqual(plan, { fields: { email_confirmed_at: NOW }, reset: null });
  assert.equal(isUnproven(proven), false);
  assert.equal(
    isUnproven(user({ is_anonymous: true })),
    false,
    "an anonymous account is its holder's",
  );
  const already = planConfirmation(user({ email_confirmed_at: NOW }), {
    channels: ["email"],
    signup: null,
    now: NOW,
  });
  assert.deepEqual(already, { fields: {}, reset: null });
});

Deno.test("confirm rule: the claim round-trips through a token's data and ignores junk", () => {
  const data = { redirect_to: "x", ...signupTokenData({ password: "h", data: { a: 1 } }) };
  assert.deepEqual(signupClaimOf(data), { password: "h", data: { a: 1 } });
  assert.equal(signupClaimOf({}), null);
  assert.equal(signupClaimOf({ signup: "yes" }), null);
  assert.deepEqual(signupClaimOf({ signup: { password: 3, data: [1] } }), {});
});
