// The operators' console (docs/console.md). Plain DOM, no dependencies. Every
// value from the server reaches the page as text (textContent), never as HTML.

const main = document.getElementById("main");
const statusEl = document.getElementById("status");
const nav = document.getElementById("nav");
let me = null;

/** Builds an element: h("a", { href: "#/" }, "text", child...). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v; // CSSOM: allowed by the CSP, unlike the attribute
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function say(text, kind = "ok") {
  statusEl.textContent = text;
  statusEl.className = kind;
}

function csrf() {
  const m = document.cookie.match(/(?:^|;\s*)authsvc_console_csrf=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

class ApiFailure extends Error {
  constructor(status, body) {
    super(body?.msg || body?.message || `Request failed (${status})`);
    this.status = status;
    this.body = body;
  }
}

/** Calls the console API; throws ApiFailure on an error answer. */
async function api(method, path, body) {
  const headers = { "x-csrf-token": csrf() };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`/console/api/${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { msg: text };
  }
  if (!res.ok) {
    if (res.status === 401 && me && !path.startsWith("login")) {
      me = null;
      location.hash = "#/login";
    }
    throw new ApiFailure(res.status, data);
  }
  return { data, headers: res.headers };
}

const gotrue = (method, path, body) => api(method, `gotrue/${path}`, body);

function fmtTime(v) {
  if (!v) return "—";
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? String(v) : d.toISOString().replace("T", " ").slice(0, 19);
}

function show(title, ...content) {
  main.replaceChildren(h("h1", {}, title), ...content.flat().filter((c) => c && c !== true));
  document.title = `${title} · Auth console`;
  main.focus();
}

/** Runs an action, reporting its outcome in the status line. */
async function act(label, fn) {
  try {
    say(`${label}…`);
    await fn();
    say(`${label}: done`);
    return true;
  } catch (e) {
    say(`${label} failed: ${e.message}`, "error");
    return false;
  }
}

// ---------------------------------------------------------------- sign-in

function loginPage() {
  nav.hidden = true;
  const email = h("input", {
    id: "email",
    type: "email",
    autocomplete: "username",
    required: true,
  });
  const password = h("input", {
    id: "password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Sign in"),
    h("label", { for: "email" }, "E-mail"),
    email,
    h("label", { for: "password" }, "Password"),
    password,
    h("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      say("Signing in…");
      const { data } = await api("POST", "login", { email: email.value, password: password.value });
      if (data.mfa_required) return mfaPage(data.factors);
      say("");
      await start();
    } catch (e) {
      const hint = e.body?.error_code === "not_admin"
        ? ` Give the account an admin role: admin set-role --email ${email.value} --role supabase_admin`
        : "";
      say(`${e.message}.${hint}`, "error");
    }
  });
  main.replaceChildren(form, firstRun());
  document.title = "Sign in · Auth console";
  email.focus();
}

/** How the first operator gets an account: the server's command line (docs/console.md). */
function firstRun() {
  const cmd = (text) => h("pre", {}, h("code", {}, text));
  return h(
    "details",
    { class: "first-run", id: "first-run" },
    h("summary", {}, "No operator account yet?"),
    h(
      "p",
      {},
      "Operators are accounts with an admin role (AUTHSVC_JWT_ADMIN_ROLES, by default service_role or supabase_admin). Create the first one on the server's machine:",
    ),
    cmd("deno task start -- admin create-user --email you@example.com --role supabase_admin"),
    h("p", {}, "or, in the container image:"),
    cmd("authsvc admin create-user --email you@example.com --role supabase_admin"),
    h(
      "p",
      {},
      "It prints a password to sign in with here. An existing account gets the role with admin set-role --email … --role supabase_admin.",
    ),
  );
}

function mfaPage(factors) {
  const select = h(
    "select",
    { id: "factor" },
    factors.map((f) =>
      h("option", { value: f.id }, `${f.friendly_name || f.factor_type} (${f.factor_type})`)
    ),
  );
  const code = h("input", {
    id: "code",
    inputmode: "numeric",
    autocomplete: "one-time-code",
    required: true,
  });
  let challenge = null;
  const form = h(
    "form",
    { class: "card" },
    h("h1", {}, "Second factor"),
    h("label", { for: "factor" }, "Factor"),
    select,
    h("label", { for: "code" }, "Code"),
    code,
    h("button", { type: "submit", class: "primary" }, "Verify"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      if (!challenge || challenge.factor !== select.value) {
        const { data } = await api("POST", "mfa/challenge", { factor_id: select.value });
        challenge = { factor: select.value, id: data.id };
      }
      await api("POST", "mfa/verify", {
        factor_id: challenge.factor,
        challenge_id: challenge.id,
        code: code.value.trim(),
      });
      say("");
      await start();
    } catch (e) {
      challenge = null;
      say(e.message, "error");
    }
  });
  main.replaceChildren(form);
  code.focus();
}

// ---------------------------------------------------------------- activity

const SERIES = [
  ["signins", "Sign-ins", "#1f4f8f"],
  ["signups", "Sign-ups", "#1a7f37"],
  ["refreshes", "Refreshes", "#8250df"],
  ["failures", "Failures", "#b42318"],
];

/** An SVG line chart of the last hour, one line per series. */
function chart(minutes) {
  const NS = "http://www.w3.org/2000/svg";
  const W = 900, H = 300, L = 40, B = 30, T = 10, R = 10;
  const max = Math.max(1, ...minutes.flatMap((m) => SERIES.map(([k]) => m[k])));
  const x = (i) => L + (i * (W - L - R)) / Math.max(1, minutes.length - 1);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const svg = document.createElementNS(NS, "svg");
  const s = (tag, attrs, text) => {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    svg.append(el);
    return el;
  };
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-labelledby", "chart-title");
  s(
    "title",
    { id: "chart-title" },
    "Sign-ins, sign-ups, refreshes and failures per minute, last hour",
  );
  for (const v of [0, max / 2, max]) {
    s("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#d0d7de" });
    s(
      "text",
      { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#57606a" },
      String(Math.round(v)),
    );
  }
  for (const [i, label] of [[0, "-60 min"], [30, "-30 min"], [59, "now"]]) {
    if (i < minutes.length) {
      s(
        "text",
        { x: x(i), y: H - 8, "text-anchor": "middle", "font-size": 11, fill: "#57606a" },
        label,
      );
    }
  }
  for (const [key, , color] of SERIES) {
    const points = minutes.map((m, i) => `${x(i).toFixed(1)},${y(m[key]).toFixed(1)}`).join(" ");
    s("polyline", { points, fill: "none", stroke: color, "stroke-width": 2, "data-series": key });
  }
  return svg;
}

async function activityPage() {
  const { data } = await api("GET", "figures");
  const minutes = data.minutes;
  const totals = h(
    "div",
    { class: "totals" },
    SERIES.map(([k, label]) =>
      h("div", {}, h("strong", {}, minutes.reduce((n, m) => n + m[k], 0)), label)
    ),
  );
  const legend = h(
    "ul",
    { class: "legend" },
    SERIES.map(([, label, color]) => h("li", { style: `--c:${color}` }, label)),
  );
  show(
    "Activity, last hour",
    totals,
    legend,
    chart(minutes),
    h("p", { class: "muted" }, "Per minute, all server processes together; refreshed every 30 s."),
  );
  const timer = setInterval(async () => {
    if (!location.hash.match(/^#\/?$/)) return clearInterval(timer);
    try {
      const fresh = (await api("GET", "figures")).data.minutes;
      main.querySelector("svg.chart")?.replaceWith(chart(fresh));
    } catch { /* the next tick retries */ }
  }, 30_000);
}

// ---------------------------------------------------------------- users

function userStatus(u) {
  if (u.banned_until && new Date(u.banned_until) > new Date()) {
    return h("span", { class: "badge banned" }, "banned");
  }
  if (!u.email_confirmed_at && !u.phone_confirmed_at) {
    return h("span", { class: "badge" }, "unconfirmed");
  }
  return h("span", { class: "badge" }, "active");
}

async function usersPage(params) {
  const filter = params.get("q") ?? "";
  const after = params.get("after") ?? "";
  const search = h("input", {
    id: "q",
    type: "search",
    value: filter,
    placeholder: "e-mail, name, phone or id",
  });
  const form = h(
    "form",
    { class: "inline", role: "search" },
    h("div", { class: "field" }, h("label", { for: "q" }, "Find users"), search),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = `#/users?q=${encodeURIComponent(search.value.trim())}`;
  });
  const invite = h("input", { id: "invite", type: "email", required: true });
  const inviteForm = h(
    "form",
    { class: "inline" },
    h("div", { class: "field" }, h("label", { for: "invite" }, "Invite by e-mail"), invite),
    h("button", { type: "submit" }, "Send invite"),
  );
  inviteForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    act(`Invite ${invite.value}`, () => gotrue("POST", "invite", { email: invite.value.trim() }));
  });

  let users = [];
  let next = "";
  const q = filter.trim();
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(q)) {
    try {
      users = [(await gotrue("GET", `admin/users/${q.toLowerCase()}`)).data];
    } catch (e) {
      if (e.status !== 404) throw e;
    }
  } else {
    const qs = new URLSearchParams({ per_page: "50", after });
    if (q) qs.set("filter", q);
    const res = await gotrue("GET", `admin/users?${qs}`);
    users = res.data.users;
    next = res.headers.get("x-next-cursor") ?? "";
  }
  const rows = users.map((u) =>
    h(
      "tr",
      {},
      h("td", { class: "wrap" }, h("a", { href: `#/users/${u.id}` }, u.email || u.phone || u.id)),
      h("td", { class: "opt" }, u.phone || "—"),
      h("td", { class: "opt" }, fmtTime(u.created_at)),
      h("td", { class: "opt" }, fmtTime(u.last_sign_in_at)),
      h("td", {}, userStatus(u)),
    )
  );
  const table = h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("caption", { class: "muted" }, users.length ? `${users.length} shown` : "No users found"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["User", "Phone", "Created", "Last sign-in", "Status"].map((t, i) =>
            h("th", { scope: "col", class: i >= 1 && i <= 3 ? "opt" : undefined }, t)
          ),
        ),
      ),
      h("tbody", {}, rows),
    ),
  );
  const pager = h(
    "p",
    {},
    after ? h("a", { href: `#/users?q=${encodeURIComponent(filter)}` }, "First page") : null,
    after && next ? " · " : null,
    next
      ? h("a", {
        href: `#/users?q=${encodeURIComponent(filter)}&after=${encodeURIComponent(next)}`,
        rel: "next",
      }, "Next page")
      : null,
  );
  show("Users", form, table, pager, h("h2", {}, "Invite a user"), inviteForm);
}

async function userPage(id) {
  const [{ data: u }, sessions, audit] = await Promise.all([
    gotrue("GET", `admin/users/${id}`),
    gotrue("GET", `admin/users/${id}/sessions`).then((r) => r.data.sessions).catch(() => []),
    gotrue("GET", `admin/audit?${new URLSearchParams({ user_id: id, per_page: "20" })}`)
      .then((r) => r.data).catch(() => []),
  ]);
  const reload = () => route();
  const email = u.email;
  const props = [
    ["Id", u.id],
    ["E-mail", email || "—"],
    ["Phone", u.phone || "—"],
    ["Role", u.role],
    ["Created", fmtTime(u.created_at)],
    ["Confirmed", fmtTime(u.email_confirmed_at || u.phone_confirmed_at)],
    ["Last sign-in", fmtTime(u.last_sign_in_at)],
    ["Banned until", fmtTime(u.banned_until)],
  ];
  const duration = h(
    "select",
    { id: "ban-duration" },
    [["1h", "1 hour"], ["24h", "1 day"], ["168h", "1 week"], ["876000h", "indefinitely"]].map((
      [v, t],
    ) => h("option", { value: v }, t)),
  );
  const banned = u.banned_until && new Date(u.banned_until) > new Date();
  const who = email || u.phone || id;
  /** A button running `fn`; with `ask` (text, or a function making it), only once confirmed. */
  const button = (label, fn, cls, ask) =>
    h("button", {
      type: "button",
      class: cls,
      onclick: async () => {
        if (ask && !confirm(typeof ask === "function" ? ask() : ask)) return;
        if (await act(label, fn)) reload();
      },
    }, label);
  const actions = h(
    "div",
    { class: "actions" },
    banned ? button("Unban", () => gotrue("PUT", `admin/users/${id}`, { ban_duration: "none" })) : [
      h("label", { for: "ban-duration", class: "sr" }, "Ban for"),
      duration,
      button(
        "Ban",
        () => gotrue("PUT", `admin/users/${id}`, { ban_duration: duration.value }),
        "danger",
        () =>
          `Ban ${who} ${
            duration.value === "876000h"
              ? "indefinitely"
              : `for ${duration.selectedOptions[0].text}`
          }? They are signed out and cannot sign in until the ban ends.`,
      ),
    ],
    button("Sign out everywhere", () => gotrue("DELETE", `admin/users/${id}/sessions`)),
    email ? button("Send recovery link", () => gotrue("POST", "recover", { email })) : null,
    email ? button("Send magic link", () => gotrue("POST", "magiclink", { email })) : null,
    email && !u.email_confirmed_at
      ? button("Resend confirmation", () => gotrue("POST", "resend", { type: "signup", email }))
      : null,
    h("button", {
      type: "button",
      class: "danger",
      onclick: async () => {
        if (!confirm(`Delete ${who}? This cannot be undone.`)) return;
        if (await act("Delete user", () => gotrue("DELETE", `admin/users/${id}`))) {
          location.hash = "#/users";
        }
      },
    }, "Delete user"),
  );
  const table = (heads, rows, empty) =>
    rows.length
      ? h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, rows),
        ),
      )
      : h("p", { class: "muted" }, empty);
  const identities = table(
    ["Provider", "Identity", "Last sign-in"],
    (u.identities ?? []).map((i) =>
      h(
        "tr",
        {},
        h("td", {}, i.provider),
        h("td", { class: "wrap" }, i.identity_data?.email || i.provider_id || i.id),
        h("td", {}, fmtTime(i.last_sign_in_at)),
      )
    ),
    "No identities.",
  );
  const factors = table(
    ["Factor", "Type", "Status", ""],
    (u.factors ?? []).map((f) =>
      h(
        "tr",
        {},
        h("td", {}, f.friendly_name || f.id),
        h("td", {}, f.factor_type),
        h("td", {}, f.status),
        h(
          "td",
          {},
          button(
            `Remove factor ${f.friendly_name || f.factor_type}`,
            () => gotrue("DELETE", `admin/users/${id}/factors/${f.id}`),
            "danger",
            `Remove the factor ${
              f.friendly_name || f.factor_type
            } of ${who}? They will have to enrol it again.`,
          ),
        ),
      )
    ),
    "No factors.",
  );
  const sessionRows = table(
    ["Started", "Last refresh", "IP", "User agent", "AAL"],
    sessions.map((s) =>
      h(
        "tr",
        {},
        h("td", {}, fmtTime(s.created_at)),
        h("td", {}, fmtTime(s.refreshed_at || s.updated_at)),
        h("td", {}, s.ip || "—"),
        h("td", { class: "wrap" }, s.user_agent || "—"),
        h("td", {}, s.aal || "aal1"),
      )
    ),
    "No active sessions.",
  );
  const entries = Array.isArray(audit) ? audit : [];
  await learnActors(entries);
  const auditRows = table(
    ["Time", "Action", "Actor", "IP"],
    entries.map((e) => auditRow(e, false)),
    "No audit entries.",
  );
  show(
    email || u.phone || u.id,
    h("dl", { class: "props" }, props.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")])),
    actions,
    h("h2", {}, "Identities"),
    identities,
    h("h2", {}, "Factors"),
    factors,
    h("h2", {}, "Sessions"),
    sessionRows,
    h("h2", {}, "Audit entries"),
    auditRows,
  );
}

// ---------------------------------------------------------------- audit

/** GoTrue's audit actions in words; the code stays in the cell's title. */
const ACTIONS = {
  login: "Signed in",
  mfa_code_login: "Signed in with a second factor",
  logout: "Signed out",
  user_signedup: "Signed up",
  user_repeated_signup: "Signed up again",
  invite_accepted: "Accepted an invite",
  user_invited: "Invited a user",
  user_modified: "Changed a user",
  user_deleted: "Deleted a user",
  user_updated_password: "Changed the password",
  user_recovery_requested: "Asked for a password reset",
  user_confirmation_requested: "Asked for a confirmation",
  user_reauthenticate_requested: "Asked to reauthenticate",
  token_refreshed: "Refreshed a session",
  token_revoked: "Revoked a session",
  identity_linked: "Linked an identity",
  identity_unlinked: "Unlinked an identity",
  factor_in_progress: "Started enrolling a factor",
  factor_updated: "Changed a factor",
  factor_unenrolled: "Removed a factor",
  factor_deleted: "Deleted a factor",
  challenge_created: "Asked for a factor's code",
  verification_attempted: "Entered a factor's code",
  generate_recovery_codes: "Made recovery codes",
  recovery_codes_deleted: "Deleted recovery codes",
  hook_failed: "A hook failed",
};

/** Audit log types in words. */
const LOG_TYPES = {
  account: "Account",
  team: "Administration",
  user: "User",
  token: "Session",
  factor: "Second factor",
  recovery_codes: "Recovery codes",
  hook: "Auth hook",
};

/** E-mail (or phone) of users by id, for entries that name their actor by id only. */
const actorNames = new Map();

/** Looks up the users that entries name by id only (older entries; GoTrue's own). */
async function learnActors(entries) {
  const ids = new Set(
    entries.filter((e) => !e.payload?.actor_username && e.payload?.actor_id)
      .map((e) => e.payload.actor_id).filter((id) => !actorNames.has(id)),
  );
  await Promise.all([...ids].map(async (id) => {
    try {
      const { data } = await gotrue("GET", `admin/users/${id}`);
      actorNames.set(id, data.email || data.phone || id);
    } catch {
      actorNames.set(id, `${id} (deleted)`);
    }
  }));
}

/** Who did it: an e-mail; an admin token without a user is the service key. */
function actorOf(p) {
  if (p?.log_type === "hook") return "the server";
  if (p?.actor_username) return p.actor_username;
  if (p?.actor_id) return actorNames.get(p.actor_id) ?? p.actor_id;
  return "service_role key";
}

function auditRow(e, wide) {
  const action = e.payload?.action ?? "";
  const type = e.payload?.log_type ?? "";
  const actor = actorOf(e.payload);
  // The user an administrator acted on, or the hook that failed and why.
  const t = e.payload?.traits ?? {};
  const subject = type === "hook" ? `${t.hook}: ${t.problem}` : t.user_email;
  return h(
    "tr",
    {},
    h("td", {}, fmtTime(e.created_at)),
    h(
      "td",
      { class: "wrap", title: action, "data-action": action },
      ACTIONS[action] ?? action,
      subject && subject !== actor ? ` ${subject}` : null,
    ),
    h("td", { class: "wrap" }, actor),
    wide ? h("td", { class: "opt", title: type }, LOG_TYPES[type] ?? type) : null,
    h("td", { class: wide ? "opt" : undefined }, e.ip_address || "—"),
  );
}

async function auditPage(params) {
  const fields = [
    ["actor", "Actor (e-mail or name)", "text"],
    ["action", "Action", "select"],
    ["since", "From", "datetime-local"],
    ["until", "To", "datetime-local"],
  ];
  const inputs = Object.fromEntries(
    fields.map(([k, , type]) => [
      k,
      type === "select"
        ? h(
          "select",
          { id: `f-${k}` },
          h("option", { value: "" }, "Any"),
          Object.entries(ACTIONS).map(([code, words]) =>
            h("option", { value: code, selected: params.get(k) === code }, words)
          ),
        )
        : h("input", { id: `f-${k}`, type, value: params.get(k) ?? "" }),
    ]),
  );
  const form = h(
    "form",
    { class: "inline", role: "search" },
    fields.map(([k, label]) =>
      h("div", { class: "field" }, h("label", { for: `f-${k}` }, label), inputs[k])
    ),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const qs = new URLSearchParams();
    for (const [k] of fields) if (inputs[k].value) qs.set(k, inputs[k].value);
    location.hash = `#/audit?${qs}`;
  });
  const page = Number(params.get("page") ?? "1") || 1;
  const qs = new URLSearchParams({ page: String(page), per_page: "50" });
  for (const k of ["actor", "action"]) if (params.get(k)) qs.set(k, params.get(k));
  for (const k of ["since", "until"]) {
    const v = params.get(k);
    if (v) qs.set(k, new Date(v).toISOString());
  }
  const { data, headers } = await gotrue("GET", `admin/audit?${qs}`);
  const total = Number(headers.get("x-total-count") ?? data.length);
  await learnActors(data);
  const rows = data.map((e) => auditRow(e, true));
  const link = (p, text) => {
    const q = new URLSearchParams(params);
    q.set("page", String(p));
    return h("a", { href: `#/audit?${q}` }, text);
  };
  show(
    "Audit log",
    form,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        {},
        h("caption", { class: "muted" }, `${total} entries`),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Time", "Action", "Actor", "Type", "IP"].map((t, i) =>
              h("th", { scope: "col", class: i >= 3 ? "opt" : undefined }, t)
            ),
          ),
        ),
        h("tbody", {}, rows),
      ),
    ),
    h(
      "p",
      {},
      page > 1 ? link(page - 1, "Previous page") : null,
      page > 1 && page * 50 < total ? " · " : null,
      page * 50 < total ? link(page + 1, "Next page") : null,
    ),
  );
}

// ---------------------------------------------------------------- inbox

async function inboxPage() {
  const { data } = await api("GET", "inbox");
  const mails = data.mails.map((m) =>
    h(
      "article",
      { class: "mail", "aria-label": `${m.subject} to ${m.to}` },
      h("h2", {}, m.subject),
      h("p", { class: "muted" }, `${fmtTime(m.at)} · to ${m.to} · ${m.kind}`),
      m.code
        ? h("p", {}, "Code: ", h("span", { class: "code", "data-code": m.code }, m.code))
        : null,
      m.links.length
        ? h(
          "ul",
          {},
          m.links.map((l) =>
            h("li", {}, h("a", { href: l, rel: "noreferrer", target: "_blank" }, l))
          ),
        )
        : null,
      h("details", {}, h("summary", {}, "Text of the mail"), h("pre", {}, m.text)),
    )
  );
  show(
    "Development inbox",
    h(
      "p",
      { class: "muted" },
      "SMTP_HOST is unset, so mails are not sent: these are the ones that would have been.",
    ),
    h("button", { type: "button", onclick: () => route() }, "Refresh"),
    mails.length ? mails : h("p", {}, "No mails yet."),
  );
}

// ---------------------------------------------------------------- hooks

const VERDICTS = {
  verified: "verified: a wrongly signed call was refused",
  not_checked: "NOT CHECKED: a wrongly signed call was accepted",
  rejected_ours: "refused our signature: another secret?",
  unknown: "unknown",
};

function hookRow(r) {
  return h(
    "tr",
    { "data-hook": r.hook },
    h("th", { scope: "row" }, r.hook.replaceAll("_", " ")),
    h("td", { class: "wrap opt" }, r.uri),
    h("td", {}, r.status === null ? "—" : String(r.status)),
    h("td", {}, `${r.ms} ms`),
    h(
      "td",
      { "data-signature": r.signature?.verdict ?? "" },
      r.signature ? VERDICTS[r.signature.verdict] : "— (PostgreSQL function)",
    ),
    h(
      "td",
      { class: "wrap" },
      h("span", { class: r.ok ? "badge" : "badge banned" }, r.ok ? "ok" : "problem"),
      r.problem ? ` ${r.problem}` : null,
    ),
    h(
      "td",
      { class: "wrap" },
      r.answer ? h("details", {}, h("summary", {}, "Answer"), h("pre", {}, r.answer)) : "(empty)",
    ),
  );
}

function hooksPage() {
  const results = h("div", {});
  const run = h("button", { type: "button" }, "Send a sample to each hook");
  run.addEventListener("click", () =>
    act("Check hooks", async () => {
      const { data } = await api("POST", "hooks/check");
      results.replaceChildren(
        data.hooks.length
          ? h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              {},
              h("caption", { class: "muted" }, `${data.hooks.length} hooks checked`),
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  ["Hook", "URI", "Status", "Time", "Signature", "Result", "Answer"].map((t) =>
                    h("th", { scope: "col", class: t === "URI" ? "opt" : undefined }, t)
                  ),
                ),
              ),
              h("tbody", {}, data.hooks.map(hookRow)),
            ),
          )
          : h("p", {}, "No hook is enabled (AUTHSVC_HOOK_<NAME>_ENABLED)."),
      );
    }));
  show(
    "Auth hooks",
    h(
      "p",
      { class: "muted" },
      "Sends each enabled hook a sample payload about you, signed as real calls are, then the " +
        "same payload signed with a wrong secret, which a hook must refuse. A send hook may " +
        "really send the sample; a PostgreSQL function runs in a transaction that is rolled back.",
    ),
    run,
    results,
  );
}

// ---------------------------------------------------------------- routing

async function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query ?? "");
  if (!me && path !== "/login") {
    return start();
  }
  if (path === "/login") return loginPage();
  for (const a of nav.querySelectorAll("a")) {
    const target = a.getAttribute("href").slice(1);
    const current = target === "/" ? path === "/" : path.startsWith(target);
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  try {
    if (path === "/" || path === "") await activityPage();
    else if (path === "/users") await usersPage(params);
    else if (path.startsWith("/users/")) await userPage(path.slice(7));
    else if (path === "/audit") await auditPage(params);
    else if (path === "/inbox") await inboxPage();
    else if (path === "/hooks") hooksPage();
    else show("Not found", h("p", {}, "No such page."));
  } catch (e) {
    if (e.status === 401) return;
    show("Something went wrong", h("p", {}, e.message));
  }
}

async function start() {
  try {
    me = (await api("GET", "me")).data;
  } catch {
    me = null;
    if (location.hash !== "#/login") location.hash = "#/login";
    else loginPage();
    return;
  }
  nav.hidden = false;
  document.getElementById("nav-inbox").hidden = !me.inbox;
  if (location.hash === "#/login" || !location.hash) location.hash = "#/";
  else await route();
}

document.getElementById("signout").addEventListener("click", async () => {
  await act("Sign out", () => api("POST", "logout"));
  me = null;
  location.hash = "#/login";
});
addEventListener("hashchange", () => {
  say("");
  route();
});
start();
