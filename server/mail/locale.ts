/**
 * Which language a mail is written in (supabase/auth#80): the operator gives
 * subjects and templates per locale (`MAILER_SUBJECTS_<KIND>_<LOCALE>`,
 * `MAILER_TEMPLATES_<KIND>_<LOCALE>`, config/mail.ts); a mail uses the
 * user's `user_metadata.locale` when there are texts in it, else the first
 * language of the request's Accept-Language that has some, else the default
 * texts. "de-AT" falls back to "de". The Go-template variables are the same
 * in every locale.
 */
import { requestStore } from "../observe/log.ts";

/** A locale as the settings key it: lower case, `-` between subtags ("pt_BR" → "pt-br"). */
export function normalizeLocale(tag: string): string {
  return tag.trim().replaceAll("_", "-").toLowerCase();
}

/** The first of `tag` and its primary language ("de-at", then "de") that is `available`. */
function match(tag: string, available: ReadonlySet<string>): string | null {
  const t = normalizeLocale(tag);
  if (!/^[a-z]{1,8}(-[a-z0-9]{1,8})*$/.test(t)) return null;
  if (available.has(t)) return t;
  const primary = t.split("-")[0];
  return available.has(primary) ? primary : null;
}

/** The language tags of an Accept-Language header, most wanted first (q=0 and `*` left out). */
export function acceptedLanguages(header: string): string[] {
  const out: { tag: string; q: number; i: number }[] = [];
  for (const [i, part] of header.split(",").slice(0, 30).entries()) {
    const [tag, ...params] = part.trim().split(";");
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) q = Number(m[1]);
    }
    if (!tag || tag === "*" || !(q > 0)) continue;
    out.push({ tag: tag.trim(), q, i });
  }
  return out.sort((a, b) => b.q - a.q || a.i - b.i).map((x) => x.tag);
}

/**
 * The locale of a mail among `available` (those with texts for its kind): the
 * user's `user_metadata.locale`, then the request's Accept-Language, else
 * null (the default texts).
 */
export function localeOf(
  userMetadata: Record<string, unknown> | undefined,
  acceptLanguage: string,
  available: ReadonlySet<string>,
): string | null {
  if (available.size === 0) return null;
  const own = userMetadata?.locale;
  if (typeof own === "string") {
    const hit = match(own, available);
    if (hit) return hit;
  }
  for (const tag of acceptedLanguages(acceptLanguage)) {
    const hit = match(tag, available);
    if (hit) return hit;
  }
  return null;
}

/** The Accept-Language of the request being handled ("" outside one; observe/request.ts). */
export function requestAcceptLanguage(): string {
  const v = requestStore.getStore()?.acceptLanguage;
  return typeof v === "string" ? v.slice(0, 500) : "";
}
