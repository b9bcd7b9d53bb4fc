/**
 * Ported from auth-js test/GoTrueApi.test.ts: the admin API (GoTrueAdminApi) with a service_role
 * key, and a few client calls that suite makes, against the CLI instance. The OAuth server cases
 * (`serviceRoleApiClient.oauth.*`) are out of scope (cases.ts).
 */
import { assert, client, creds, ported, serviceRole, signedUp, upstream } from "./_helpers.ts";

const INVALID_EMAIL = "xx:;x@x.x";
const UNKNOWN_ID = "83fd9e20-7a80-46e4-bf29-a86e3d6bbf66";
const AVATAR = "https://avatars.githubusercontent.com/u/97165289";

/** A user made through the admin API with an address of its own and no metadata. */
async function newUser(email = creds().email) {
  const admin = await serviceRole();
  const { data, error } = await admin.createUser({
    email,
    password: creds().password,
    user_metadata: {},
  });
  assert.equal(error, null, String(error?.message));
  assert.ok(data.user?.id);
  return { admin, user: data.user, email };
}

/** generateLink's properties: every field, and an action link of `type` with token and redirect. */
function assertLink(p: Record<string, unknown> | null, type: string): void {
  assert.ok(p);
  for (
    const k of ["action_link", "email_otp", "hashed_token", "redirect_to", "verification_type"]
  ) {
    assert.ok(k in p, `properties.${k}`);
  }
  const link = String(p.action_link);
  assert.match(link, /\?token/);
  assert.match(link, new RegExp(`type=${type}`));
  // it may carry SITE_URL where redirectTo is not allowed, as upstream notes
  assert.match(link, /redirect_to=/);
}

const P = "GoTrueAdminApi > ";

upstream("GoTrueApi.test.ts", import.meta.url, [
  ported(`${P}User creation > createUser() should create a new user`, async () => {
    const { user, email } = await newUser();
    assert.equal(user.email, email);
  }),
  ported(`${P}User creation > createUser() with user metadata`, async () => {
    const admin = await serviceRole();
    const { email, password } = creds();
    const user_metadata = { profile_image: AVATAR };
    const { data, error } = await admin.createUser({ email, password, user_metadata });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
    assert.deepEqual(data.user?.user_metadata, user_metadata);
    assert.match(String(data.user?.user_metadata.profile_image), /^https:\/\/avatars\..+/);
  }),
  ported(`${P}User creation > createUser() with app metadata`, async () => {
    const admin = await serviceRole();
    const { email, password } = creds();
    const { data, error } = await admin.createUser({
      email,
      password,
      app_metadata: { roles: ["editor", "publisher"] },
    });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
    assert.ok("provider" in data.user!.app_metadata);
    assert.ok("providers" in data.user!.app_metadata);
  }),
  ported(`${P}User creation > createUser() with user and app metadata`, async () => {
    const admin = await serviceRole();
    const { email, password } = creds();
    const { data, error } = await admin.createUser({
      email,
      password,
      app_metadata: { roles: ["editor", "publisher"] },
      user_metadata: { profile_image: AVATAR },
    });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
    assert.match(String(data.user?.user_metadata.profile_image), /^https:\/\/avatars\..+/);
    assert.ok("provider" in data.user!.app_metadata);
    assert.ok("providers" in data.user!.app_metadata);
  }),
  ported(`${P}User creation > createUser() returns AuthError when email is invalid`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.createUser({
      email: INVALID_EMAIL,
      password: "password123",
    });
    assert.ok(error);
    assert.match(error.message, /Unable to validate email address: invalid format/);
    assert.equal(data.user, null);
  }),

  ported(`${P}List users > listUsers() should return registered users`, async () => {
    const { admin, email } = await newUser();
    const { data, error } = await admin.listUsers();
    assert.equal(error, null);
    assert.ok("users" in data && "aud" in data, "the page carries users and aud");
    const emails = data.users.map((u) => u.email);
    assert.ok(emails.length > 0);
    assert.ok(emails.includes(email), "the new user is listed");
  }),
  ported(`${P}List users > listUsers() returns AuthError when page is invalid`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.listUsers({ page: -1, perPage: 10 });
    assert.ok(error);
    assert.deepEqual(data.users, []);
  }),

  ported(`${P}Get user > getUser() fetches a user by their access_token`, async () => {
    const { c, email } = await signedUp();
    const { data, error } = await c.getUser();
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
  }),
  ported(
    `${P}Get user > getUserById() should a registered user given its user identifier`,
    async () => {
      const { admin, user, email } = await newUser();
      const { data, error } = await admin.getUserById(user.id);
      assert.equal(error, null);
      assert.equal(data.user?.email, email);
    },
  ),
  ported(`${P}Get user > getUserById() returns AuthError when user id is invalid`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.getUserById(UNKNOWN_ID);
    assert.ok(error);
    assert.equal(data.user, null);
  }),

  ported(`${P}User updates > modify email using updateUserById()`, async () => {
    const { admin, user, email } = await newUser();
    const { data, error } = await admin.updateUserById(user.id, {
      email: `new_${email}`,
    });
    assert.equal(error, null);
    assert.equal(data.user?.email, `new_${email}`);
  }),
  ported(`${P}User updates > modify user metadata using updateUserById()`, async () => {
    const { admin, user, email } = await newUser();
    const { data, error } = await admin.updateUserById(user.id, {
      user_metadata: { favorite_color: "yellow" },
    });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
    assert.deepEqual(data.user?.user_metadata, { favorite_color: "yellow" });
  }),
  ported(`${P}User updates > modify app metadata using updateUserById()`, async () => {
    const { admin, user, email } = await newUser();
    const { data, error } = await admin.updateUserById(user.id, {
      app_metadata: { roles: ["admin", "publisher"] },
    });
    assert.equal(error, null);
    assert.equal(data.user?.email, email);
    assert.ok("roles" in data.user!.app_metadata);
  }),
  ported(`${P}User updates > modify confirm email using updateUserById()`, async () => {
    const admin = await serviceRole();
    const { email, password } = creds();
    const made = await admin.createUser({ email, password, email_confirm: false });
    assert.equal(made.error, null);
    assert.ok(!made.data.user?.email_confirmed_at, "created unconfirmed");
    const { data, error } = await admin.updateUserById(made.data.user!.id, {
      email_confirm: true,
    });
    assert.equal(error, null);
    assert.ok(data.user?.email_confirmed_at, "confirmed by the update");
  }),

  ported(`${P}User deletes > deleteUser() should be able delete an existing user`, async () => {
    const { admin, user, email } = await newUser();
    const { data, error } = await admin.deleteUser(user.id);
    assert.equal(error, null);
    assert.ok(data.user);
    const list = await admin.listUsers();
    assert.equal(list.error, null);
    const emails = list.data.users.map((u) => u.email);
    assert.ok(emails.length > 0);
    assert.ok(!emails.includes(email), "the deleted user is not listed");
  }),
  ported(`${P}User deletes > deleteUser() returns AuthError when user id is invalid`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.deleteUser(UNKNOWN_ID);
    assert.ok(error);
    assert.equal(data.user, null);
  }),

  ported(
    `${P}User registration > generateLink supports signUp with generate confirmation signup link`,
    async () => {
      const admin = await serviceRole();
      const { email, password } = creds();
      const { data, error } = await admin.generateLink({
        type: "signup",
        email,
        password,
        options: { data: { status: "alpha" }, redirectTo: "http://localhost:9999/welcome" },
      });
      assert.equal(error, null);
      assert.ok(data.user?.email);
      assert.deepEqual(data.user.user_metadata, { status: "alpha" });
      assertLink(data.properties, "signup");
    },
  ),
  ported(
    `${P}User registration > generateLink supports updating emails with generate email change links`,
    async () => {
      const { admin, email } = await newUser();
      const newEmail = creds().email;
      const { data, error } = await admin.generateLink({
        type: "email_change_current",
        email,
        newEmail,
        options: { redirectTo: "http://localhost:9999/welcome" },
      });
      assert.equal(error, null);
      assert.ok(data.user?.email);
      assert.ok("user_metadata" in data.user);
      assert.equal(data.user.new_email, newEmail);
      assertLink(data.properties, "email_change");
    },
  ),
  ported(
    `${P}User registration > inviteUserByEmail() creates a new user with an invited_at timestamp`,
    async () => {
      const admin = await serviceRole();
      const { data, error } = await admin.inviteUserByEmail(creds().email, {
        data: { status: "alpha" },
        redirectTo: "http://localhost:9999/welcome",
      });
      assert.equal(error, null);
      assert.ok(data.user?.invited_at, "invited_at is set");
    },
  ),
  ported(
    `${P}User registration > inviteUserByEmail() returns AuthError when email is invalid`,
    async () => {
      const admin = await serviceRole();
      const { data, error } = await admin.inviteUserByEmail(INVALID_EMAIL);
      assert.ok(error);
      assert.match(error.message, /Unable to validate email address: invalid format/);
      assert.equal(data.user, null);
    },
  ),
  ported(
    `${P}User registration > generateLink() returns AuthError when email is invalid`,
    async () => {
      const admin = await serviceRole();
      const { data, error } = await admin.generateLink({
        type: "signup",
        email: INVALID_EMAIL,
        password: "password123",
      });
      assert.ok(error);
      assert.match(error.message, /Unable to validate email address: invalid format/);
      assert.equal(data.user, null);
      assert.equal(data.properties, null);
    },
  ),

  ported(
    `${P}User authentication > signOut() > signOut() with an valid access token`,
    async () => {
      const { session } = await signedUp();
      const admin = await serviceRole();
      const { error } = await admin.signOut(
        (session as { access_token: string }).access_token,
      );
      assert.equal(error, null);
    },
  ),
  ported(
    `${P}User authentication > signOut() > signOut() with an invalid access token`,
    async () => {
      const admin = await serviceRole();
      const { error } = await admin.signOut("this-is-a-bad-token");
      assert.match(String(error?.message), /^invalid JWT/);
    },
  ),
  ported(`${P}User authentication > signOut() > signOut() fails with invalid scope`, async () => {
    const { c, email, password } = await signedUp();
    const { data, error } = await c.signInWithPassword({ email, password });
    assert.equal(error, null);
    assert.ok(data.session);
    await assert.rejects(
      // deno-lint-ignore no-explicit-any
      c.signOut({ scope: "invalid_scope" as any }),
      /@supabase\/auth-js: Parameter scope must be one of global, local, others/,
    );
  }),

  ported(
    `${P}Email/Phone Otp Verification > GoTrueClient verifyOtp() > verifyOtp() with non-existent phone number`,
    async () => {
      const { data, error } = await client().verifyOtp({
        phone: creds().phone,
        token: String(100000 + Math.floor(Math.random() * 900000)),
        type: "sms",
      });
      assert.equal(data.user, null);
      assert.equal(error?.message, "Token has expired or is invalid");
      assert.equal(error?.status, 403);
    },
  ),
  ported(
    `${P}Email/Phone Otp Verification > GoTrueClient verifyOtp() > verifyOTP() with invalid phone number`,
    async () => {
      const { data, error } = await client().verifyOtp({
        phone: `${creds().phone}-invalid`,
        token: "123456",
        type: "sms",
      });
      assert.equal(data.user, null);
      assert.equal(error?.message, "Invalid phone number format (E.164 required)");
    },
  ),

  ported(
    `${P}Update User > updateUserById() returns AuthError when user id is invalid`,
    async () => {
      const admin = await serviceRole();
      const { data, error } = await admin.updateUserById(UNKNOWN_ID, {
        email: "new@email.com",
      });
      assert.ok(error);
      assert.equal(data.user, null);
    },
  ),

  ported(`${P}MFA Admin > mfa factor management: add, list and delete`, async () => {
    const { c, session } = await signedUp();
    const uid = (session as { user: { id: string } }).user.id;
    const enrolled = await c.mfa.enroll({ factorType: "totp" });
    assert.equal(enrolled.error, null);
    const admin = await serviceRole();
    const listed = await admin.mfa.listFactors({ userId: uid });
    assert.equal(listed.error, null);
    assert.ok(Array.isArray(listed.data?.factors) && listed.data.factors.length > 0);
    const factorId = listed.data!.factors[0].id;
    const deleted = await admin.mfa.deleteFactor({ userId: uid, id: factorId });
    assert.equal(deleted.error, null);
    // auth-js hands the server's answer ({ id }) back under data.data
    assert.equal((deleted.data as unknown as { data: { id: string } }).data.id, factorId);
    const after = await admin.mfa.listFactors({ userId: uid });
    assert.equal(after.error, null);
    assert.deepEqual(after.data?.factors, []);
  }),
  ported(`${P}MFA Admin > mfa.listFactors returns AuthError for invalid user`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.mfa.listFactors({ userId: UNKNOWN_ID });
    assert.equal(data, null);
    assert.ok(error);
  }),
  ported(`${P}MFA Admin > mfa.deleteFactors returns AuthError for invalid user`, async () => {
    const admin = await serviceRole();
    const { data, error } = await admin.mfa.deleteFactor({
      userId: UNKNOWN_ID,
      id: UNKNOWN_ID,
    });
    assert.equal(data, null);
    assert.ok(error);
  }),
]);
