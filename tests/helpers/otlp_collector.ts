/**
 * A small OTLP/HTTP receiver in the test process: accepts `POST /v1/traces`
 * and `POST /v1/metrics` as the exporters send them, in JSON
 * (`application/json`) or protobuf (`application/x-protobuf`, decoded here
 * with a minimal wire-format reader), and keeps what it understood:
 *
 *   const col = startOtlpCollector();
 *   ... AUTHSVC_TRACING_ENABLED=true, OTEL_EXPORTER_OTLP_ENDPOINT=col.url ...
 *   const spans = col.spans.filter((s) => s.name === "/health");
 *   await col.close();
 */

/** An attribute value as received. */
export type AttrValue = string | number | boolean;

/** One received span, the same whichever encoding carried it. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  attributes: Record<string, AttrValue>;
  resource: Record<string, AttrValue>;
}

/** A running collector. */
export interface OtlpCollector {
  url: string;
  spans: ReceivedSpan[];
  /** Names of received metrics, with the resource they came with. */
  metrics: { name: string; resource: Record<string, AttrValue> }[];
  /** Content types of the export requests received. */
  contentTypes: string[];
  /** Resolves once `pred` holds for the received data (polling, bounded). */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

// ---- protobuf wire format -------------------------------------------------

type Field = { no: number; wire: number; int?: bigint; bytes?: Uint8Array };

function readVarint(b: Uint8Array, pos: { i: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const byte = b[pos.i++];
    if (byte === undefined) throw new Error("truncated varint");
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
    shift += 7n;
  }
}

function fields(b: Uint8Array): Field[] {
  const out: Field[] = [];
  const pos = { i: 0 };
  while (pos.i < b.length) {
    const key = Number(readVarint(b, pos));
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, int: readVarint(b, pos) });
    else if (wire === 1) {
      out.push({ no, wire, bytes: b.subarray(pos.i, pos.i + 8) });
      pos.i += 8;
    } else if (wire === 2) {
      const len = Number(readVarint(b, pos));
      out.push({ no, wire, bytes: b.subarray(pos.i, pos.i + len) });
      pos.i += len;
    } else if (wire === 5) {
      out.push({ no, wire, bytes: b.subarray(pos.i, pos.i + 4) });
      pos.i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const dec = new TextDecoder();
const hex = (b?: Uint8Array) =>
  b ? Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("") : "";

function pbAnyValue(b: Uint8Array): AttrValue {
  for (const f of fields(b)) {
    if (f.no === 1) return dec.decode(f.bytes);
    if (f.no === 2) return f.int === 1n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.int!));
    if (f.no === 4) {
      return new DataView(f.bytes!.buffer, f.bytes!.byteOffset, 8).getFloat64(0, true);
    }
  }
  return "";
}

function pbAttributes(list: Field[], no: number): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const f of list.filter((x) => x.no === no)) {
    const kv = fields(f.bytes!);
    const key = dec.decode(kv.find((x) => x.no === 1)?.bytes);
    const v = kv.find((x) => x.no === 2)?.bytes;
    out[key] = v ? pbAnyValue(v) : "";
  }
  return out;
}

function pbResource(rs: Field[]): Record<string, AttrValue> {
  const r = rs.find((x) => x.no === 1)?.bytes;
  return r ? pbAttributes(fields(r), 1) : {};
}

function pbSpans(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rsF of fields(body).filter((f) => f.no === 1)) {
    const rs = fields(rsF.bytes!);
    const resource = pbResource(rs);
    for (const ssF of rs.filter((f) => f.no === 2)) {
      for (const spF of fields(ssF.bytes!).filter((f) => f.no === 2)) {
        const sp = fields(spF.bytes!);
        const get = (no: number) => sp.find((x) => x.no === no);
        out.push({
          traceId: hex(get(1)?.bytes),
          spanId: hex(get(2)?.bytes),
          parentSpanId: hex(get(4)?.bytes),
          name: dec.decode(get(5)?.bytes),
          kind: Number(get(6)?.int ?? 0n),
          attributes: pbAttributes(sp, 9),
          resource,
        });
      }
    }
  }
  return out;
}

function pbMetricNames(body: Uint8Array): OtlpCollector["metrics"] {
  const out: OtlpCollector["metrics"] = [];
  for (const rmF of fields(body).filter((f) => f.no === 1)) {
    const rm = fields(rmF.bytes!);
    const resource = pbResource(rm);
    for (const smF of rm.filter((f) => f.no === 2)) {
      for (const mF of fields(smF.bytes!).filter((f) => f.no === 2)) {
        out.push({ name: dec.decode(fields(mF.bytes!).find((x) => x.no === 1)?.bytes), resource });
      }
    }
  }
  return out;
}

// ---- JSON -----------------------------------------------------------------

type JsonKv = { key: string; value?: Record<string, unknown> };

function jsonValue(v: Record<string, unknown> | undefined): AttrValue {
  if (!v) return "";
  if ("stringValue" in v) return String(v.stringValue);
  if ("boolValue" in v) return Boolean(v.boolValue);
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  return "";
}

function jsonAttributes(list: JsonKv[] | undefined): Record<string, AttrValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

// deno-lint-ignore no-explicit-any
function jsonSpans(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const sp of ss.spans ?? []) {
        out.push({
          name: sp.name,
          traceId: sp.traceId ?? "",
          spanId: sp.spanId ?? "",
          parentSpanId: sp.parentSpanId ?? "",
          kind: Number(sp.kind ?? 0),
          attributes: jsonAttributes(sp.attributes),
          resource,
        });
      }
    }
  }
  return out;
}

// deno-lint-ignore no-explicit-any
function jsonMetricNames(body: any): OtlpCollector["metrics"] {
  const out: OtlpCollector["metrics"] = [];
  for (const rm of body.resourceMetrics ?? []) {
    const resource = jsonAttributes(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) out.push({ name: m.name, resource });
    }
  }
  return out;
}

/** Starts a collector on 127.0.0.1, port 0. */
export function startOtlpCollector(): OtlpCollector {
  const spans: ReceivedSpan[] = [];
  const metrics: OtlpCollector["metrics"] = [];
  const contentTypes: string[] = [];
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      if (req.method !== "POST" || (path !== "/v1/traces" && path !== "/v1/metrics")) {
        await req.body?.cancel();
        return new Response("not found", { status: 404 });
      }
      const type = req.headers.get("content-type") ?? "";
      contentTypes.push(type);
      const bytes = new Uint8Array(await req.arrayBuffer());
      const proto = type.startsWith("application/x-protobuf");
      if (!proto && !type.startsWith("application/json")) {
        return new Response("unsupported content type", { status: 415 });
      }
      try {
        if (path === "/v1/traces") {
          spans.push(...(proto ? pbSpans(bytes) : jsonSpans(JSON.parse(dec.decode(bytes)))));
        } else {
          metrics.push(
            ...(proto ? pbMetricNames(bytes) : jsonMetricNames(JSON.parse(dec.decode(bytes)))),
          );
        }
      } catch (e) {
        return new Response(`cannot decode: ${(e as Error).message}`, { status: 400 });
      }
      return proto
        ? new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } })
        : Response.json({});
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans,
    metrics,
    contentTypes,
    async waitFor(pred, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (!pred()) {
        if (Date.now() > until) throw new Error("the collector did not receive what was expected");
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async close() {
      ac.abort();
      await server.finished;
    },
  };
}
