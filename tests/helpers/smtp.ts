/**
 * A real SMTP server in the test process (`smtp-server`), whose received mails
 * are parsed with `mailparser`, so tests read mail as a user would.
 *
 *   const smtp = await startSmtp();               // 127.0.0.1, a free port
 *   const authed = await startSmtp({ auth: { user: "u", pass: "p" } }); // AUTH required
 *   const srv = await startTestServer({ ...smtp.env }); // AUTHSVC_SMTP_HOST/PORT
 *   ...
 *   const mail = await smtp.waitForMail("a@example.com", { subject: /Confirm/ });
 *   mail.subject; mail.text; mail.html; mail.from;
 *   mail.links;     // every http(s) URL of the text part, in order
 *   mail.link;      // the action link (the first with ?token=, else the first), "" when none
 *   mail.code;      // the code: the number after "code", else the first 6-10 digit number
 *   mail.authUser;  // the user the client authenticated as ("" without AUTH)
 *   smtp.mode = "refuse"; // answer 554 to every mail (the server is "down")
 *   smtp.mode = "stall";  // accept the connection, never answer the DATA
 *   smtp.mode = "accept"; // back to normal
 *   const release = smtp.hold("a@example.com"); // mails to it wait for their SMTP answer...
 *   release();                                   // ...until released (then received)
 *   smtp.received;        // every parsed mail so far
 *   smtp.count(to);       // how many mails reached `to`
 *   await smtp.close();
 *
 * `waitForMail` returns the oldest mail to `to` (and matching `subject`) not
 * returned before, waiting up to `timeoutMs` for it (default 30,000: a bound
 * for a hung test, not an expectation of speed); it throws naming what it
 * waited for. `expectNoMail(to, ms)` asserts that none arrives.
 */
import { simpleParser, SMTPServer } from "./deps.ts";

/** A received, parsed mail. */
export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  links: string[];
  link: string;
  code: string;
  authUser: string;
}

/** A running SMTP test server. */
export interface TestSmtp {
  host: string;
  port: number;
  /** Settings that point a test server at this SMTP server. */
  env: Record<string, string>;
  mode: "accept" | "refuse" | "stall";
  /**
   * Holds mails to `to`: the server's send of such a mail waits for its SMTP
   * answer (a slow relay) until the returned function is called; only then
   * is the mail received.
   */
  hold(to: string): () => void;
  received: ReceivedMail[];
  count(to: string): number;
  waitForMail(
    to: string,
    opts?: { subject?: string | RegExp; timeoutMs?: number },
  ): Promise<ReceivedMail>;
  expectNoMail(to: string, ms?: number): Promise<void>;
  close(): Promise<void>;
}

// deno-lint-ignore no-explicit-any
type Any = any;

/** Starts an SMTP server on 127.0.0.1, port 0; with `auth`, mail needs AUTH with those credentials. */
export async function startSmtp(
  opts: { auth?: { user: string; pass: string } } = {},
): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const waiters = new Set<() => void>();
  const stalled: (() => void)[] = [];
  const held = new Map<string, (() => void)[]>();
  const state = { mode: "accept" as TestSmtp["mode"] };

  const auth = opts.auth;
  const server = new SMTPServer({
    authOptional: !auth,
    allowInsecureAuth: !!auth,
    authMethods: ["PLAIN", "LOGIN"],
    disabledCommands: auth ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
    logger: false,
    onAuth(a: Any, _session: Any, callback: (e: Error | null, r?: Any) => void) {
      if (auth && a.username === auth.user && a.password === auth.pass) {
        return callback(null, { user: a.username });
      }
      callback(new Error("Invalid username or password"));
    },
    onData(stream: Any, session: Any, callback: (e?: Error | null) => void) {
      if (state.mode === "refuse") {
        stream.resume();
        stream.on("end", () => {
          const err = new Error("Service unavailable") as Error & { responseCode: number };
          err.responseCode = 554;
          callback(err);
        });
        return;
      }
      if (state.mode === "stall") {
        stream.resume();
        stalled.push(() => callback(new Error("closing")));
        return;
      }
      simpleParser(stream).then((m: Any) => {
        const text = String(m.text ?? "");
        const links = [...text.matchAll(/https?:\/\/[^\s<>"]+/g)]
          .map((x) => x[0].replace(/[.,;:!?)]+$/, ""));
        const toList = ([] as Any[]).concat(m.to ?? []).flatMap((a: Any) => a.value ?? [])
          .map((a: Any) => String(a.address).toLowerCase());
        const deliver = () => {
          received.push({
            from: String(m.from?.text ?? ""),
            to: toList,
            subject: String(m.subject ?? ""),
            text,
            html: typeof m.html === "string" ? m.html : "",
            links,
            link: links.find((l) => /[?&]token=/.test(l)) ?? links[0] ?? "",
            code: mailCode(text),
            authUser: typeof session?.user === "string" ? session.user : "",
          });
          for (const w of waiters) w();
          callback();
        };
        const waiting = toList.map((t: string) => held.get(t)).find((w: unknown) => w);
        if (waiting) waiting.push(deliver);
        else deliver();
      }, (e: Error) => callback(e));
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.server.address() as { port: number }).port;

  const find = (to: string, subject?: string | RegExp) =>
    received.find((m) =>
      !taken.has(m) && m.to.includes(to.toLowerCase()) &&
      (subject === undefined ||
        (typeof subject === "string" ? m.subject === subject : subject.test(m.subject)))
    );

  return {
    host: "127.0.0.1",
    port,
    env: { AUTHSVC_SMTP_HOST: "127.0.0.1", AUTHSVC_SMTP_PORT: String(port) },
    get mode() {
      return state.mode;
    },
    set mode(m) {
      state.mode = m;
      if (m !== "stall") { for (const f of stalled.splice(0)) f(); }
    },
    hold(to) {
      const key = to.toLowerCase();
      const waiting: (() => void)[] = [];
      held.set(key, waiting);
      return () => {
        held.delete(key);
        for (const f of waiting.splice(0)) f();
      };
    },
    received,
    count: (to) => received.filter((m) => m.to.includes(to.toLowerCase())).length,
    waitForMail(to, opts = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = find(to, opts.subject);
          if (!m) return false;
          taken.add(m);
          waiters.delete(check);
          clearTimeout(timer);
          resolve(m);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`no mail to ${to}${opts.subject ? ` with subject ${opts.subject}` : ""}`),
          );
        }, opts.timeoutMs ?? 30_000);
        waiters.add(check);
        check();
      });
    },
    async expectNoMail(to, ms = 300) {
      await new Promise((r) => setTimeout(r, ms));
      const m = find(to);
      if (m) throw new Error(`unexpected mail to ${to}: ${m.subject}`);
    },
    async close() {
      for (const f of stalled.splice(0)) f();
      for (const waiting of held.values()) for (const f of waiting.splice(0)) f();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The one-time code of a mail's text: the 6-10 digit number after the word
 * "code" (every template of the server says "enter the code: 123456"), else
 * the first such number. Taking the first number alone read the digits of an
 * address such as `c-3-204815@example.com`, which a random part of a test
 * address is about one time in seventeen, when the address came before the code.
 */
function mailCode(text: string): string {
  return (/\bcode\b\D{0,40}?(\d{6,10})\b/i.exec(text) ?? /\b(\d{6,10})\b/.exec(text))?.[1] ?? "";
}
