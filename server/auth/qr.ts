/**
 * QR codes of `otpauth://` URIs as SVG, for TOTP enrollment. The `qrcode`
 * package computes the module matrix; the SVG is drawn here: one path of
 * dark squares on a white background with a four-module quiet zone, and no
 * `#` anywhere, so the text can follow `data:image/svg+xml;utf-8,` unencoded
 * (the way `@supabase/auth-js` shows GoTrue's `qr_code`).
 */
import QRCode from "qrcode";

/** The part of the `qrcode` package this file uses. */
interface QrMatrix {
  modules: { size: number; get(row: number, col: number): number | boolean };
}
const create = (QRCode as { create(text: string, opts: object): QrMatrix }).create;

/** The data-URI prefix auth-js puts before the server's SVG. */
export const SVG_DATA_URI_PREFIX = "data:image/svg+xml;utf-8,";

/**
 * An SVG image of a QR code of `text` (error correction level M; `pixels` per
 * module in the width and height attributes, the viewBox keeps it scalable).
 */
export function qrSvg(text: string, pixels = 4): string {
  const { modules } = create(text, { errorCorrectionLevel: "M" });
  const n = modules.size;
  const margin = 4;
  const full = n + 2 * margin;
  let d = "";
  for (let r = 0; r < n; r++) {
    let c = 0;
    while (c < n) {
      if (!modules.get(r, c)) {
        c++;
        continue;
      }
      const start = c;
      while (c < n && modules.get(r, c)) c++;
      d += `M${start + margin} ${r + margin}h${c - start}v1h-${c - start}z`;
    }
  }
  const size = full * pixels;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" ` +
    `viewBox="0 0 ${full} ${full}" shape-rendering="crispEdges">` +
    `<rect width="${full}" height="${full}" fill="white"/>` +
    `<path fill="black" d="${d}"/></svg>`;
}

/** `qrSvg(text)` as a `data:image/svg+xml;utf-8,` URI. */
export function qrDataUri(text: string): string {
  return SVG_DATA_URI_PREFIX + qrSvg(text);
}
