/** Cases ported from supabase/auth internal/api/logout_test.go. */
import { assert, conformance, ported } from "./_helpers.ts";

conformance(
  "logout_test.go",
  {},
  ["", "global", "local", "others"].map((scope) =>
    ported(`TestLogoutSuccess (scope ${scope || "default"})`, async (e) => {
      const s = await e.session();
      const r = await e.call(
        "POST",
        `/logout${scope ? `?scope=${scope}` : ""}`,
        undefined,
        s.access_token,
      );
      assert.equal(r.status, 204, r.text);
      // a local or global logout ends this session: its refresh token is gone
      const refresh = await e.call("POST", "/token?grant_type=refresh_token", {
        refresh_token: s.refresh_token,
      });
      assert.equal(refresh.status, scope === "others" ? 200 : 400, refresh.text);
    })
  ),
);
