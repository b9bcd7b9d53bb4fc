/** Shared set-up of the phone tests: an SMS fake, a server pointed at it, a movable clock. */
import type { Clock } from "../../../server/auth/clock.ts";
import type { SmsProviderName } from "../../../server/config/mod.ts";
import type { GoTrueClient } from "../../helpers/deps.ts";
import { authJsClient } from "../../helpers/auth_js.ts";
import { startTestServer, type TestServer } from "../../helpers/server.ts";
import { type SmsFake, type SmsFakeOptions, startSmsFake } from "../../helpers/sms_fakes.ts";

/** A clock a test moves by hand. */
export class TestClock implements Clock {
  t = Date.now();
  now(): Date {
    return new Date(this.t);
  }
  advance(sec: number): void {
    this.t += sec * 1000;
  }
}

/** What a phone test gets. */
export interface PhoneCtx {
  srv: TestServer;
  sms: SmsFake;
  clock: TestClock;
}

/** Runs `fn` with a fake of `provider` and a server using it (phone sign-ups on); closes both. */
export async function withPhoneServer(
  provider: SmsProviderName,
  env: Record<string, string>,
  fn: (ctx: PhoneCtx) => Promise<void>,
  opts: SmsFakeOptions = {},
): Promise<void> {
  const sms = await startSmsFake(provider, opts);
  const clock = new TestClock();
  let srv: TestServer | undefined;
  try {
    srv = await startTestServer(
      { ...sms.env, AUTHSVC_EXTERNAL_PHONE_ENABLED: "true", ...env },
      { clock },
    );
    await fn({ srv, sms, clock });
  } finally {
    await srv?.close();
    await sms.close();
  }
}

/** An auth-js client of the test server, keeping its session in memory. */
export function authClient(srv: TestServer): GoTrueClient {
  return authJsClient(srv.url);
}
