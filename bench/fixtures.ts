/**
 * What the endpoint benches start from, made through the public API of the
 * running server: users signed up with a known password, one access token,
 * and a pool of live refresh tokens, each from its own password sign-in (so
 * each starts its own session and the pool's exchanges never contend for
 * one session's lock).
 */

/** The fixtures of one bench run. */
export interface Fixtures {
  password: string;
  emails: string[];
  accessToken: string | null;
  refreshTokens: string[];
  signupWorks: boolean;
  notes: string[];
}

const PASSWORD = "bench-Password-123!";

async function post(
  url: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

/** Signs up `users` users and signs in `refreshPool` times. */
export async function createFixtures(
  base: string,
  opts: { users: number; refreshPool: number },
): Promise<Fixtures> {
  const notes: string[] = [];
  const run = crypto.randomUUID().slice(0, 8);
  const emails = Array.from(
    { length: opts.users },
    (_, i) => `fixture-${run}-${i}@bench.example.com`,
  );
  const signups = await pool(
    emails,
    4,
    (email) => post(`${base}/signup`, { email, password: PASSWORD }),
  );
  const signupWorks = signups.every((r) => r.status === 200);
  if (!signupWorks) {
    const bad = signups.find((r) => r.status !== 200)!;
    notes.push(
      `POST /signup answered ${bad.status} ${
        JSON.stringify(bad.body).slice(0, 200)
      }: endpoint benches that need users are skipped`,
    );
    return {
      password: PASSWORD,
      emails: [],
      accessToken: null,
      refreshTokens: [],
      signupWorks,
      notes,
    };
  }
  const signins = await pool(
    Array.from({ length: opts.refreshPool }, (_, i) => emails[i % emails.length]),
    4,
    (email) => post(`${base}/token?grant_type=password`, { email, password: PASSWORD }),
  );
  const ok = signins.filter((r) => r.status === 200 && typeof r.body.refresh_token === "string");
  if (ok.length < signins.length) {
    const bad = signins.find((r) => r.status !== 200);
    notes.push(
      `password grant failed for ${signins.length - ok.length} fixture sign-ins: ${bad?.status} ${
        JSON.stringify(bad?.body).slice(0, 200)
      }`,
    );
  }
  const accessToken = typeof ok[0]?.body.access_token === "string"
    ? ok[0].body.access_token as string
    : typeof signups[0].body.access_token === "string"
    ? signups[0].body.access_token as string
    : null;
  // The first sign-in's session stays untouched for GET /user; the rest feed the refresh pool.
  return {
    password: PASSWORD,
    emails: ok.length ? emails : [],
    accessToken,
    refreshTokens: ok.slice(1).map((r) => r.body.refresh_token as string),
    signupWorks,
    notes,
  };
}
