/**
 * The part of Go's text/template that GoTrue's default and common custom
 * mail templates use, so they render here as there:
 *
 * - `{{ .Name }}`, `{{ .Data.key }}`: a variable (HTML-escaped in HTML bodies);
 * - `{{ if X }}`, `{{ else if X }}`, `{{ else }}`, `{{ end }}`;
 * - functions `eq a b...` (a equals any of the rest), `ne a b`, `and`, `or`,
 *   `not`, with string, number and boolean literals and parentheses;
 * - `{{- ... -}}` trim markers and Go template comments.
 *
 * Anything else (range, with, define, pipes `|`, other functions, `$`
 * variables) is refused when the template is compiled, with a message naming
 * it, so raw template syntax never reaches a mailbox.
 */

/** A template that cannot be used, and why. */
export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

type Expr =
  | { k: "var"; path: string[] }
  | { k: "lit"; v: unknown }
  | { k: "call"; fn: string; args: Expr[] };

type Node =
  | { k: "text"; s: string }
  | { k: "out"; e: Expr }
  | { k: "if"; branches: { cond: Expr | null; body: Node[] }[] };

const FUNCTIONS = new Set(["eq", "ne", "and", "or", "not"]);

/** Splits into text and actions, applying trim markers. */
function lex(src: string): ({ text: string } | { action: string; at: number })[] {
  const out: ({ text: string } | { action: string; at: number })[] = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf("{{", i);
    if (open < 0) {
      out.push({ text: src.slice(i) });
      break;
    }
    let text = src.slice(i, open);
    let body = "";
    const close = src.indexOf("}}", open + 2);
    if (close < 0) throw new TemplateError(`unclosed action at offset ${open}`);
    body = src.slice(open + 2, close);
    if (body.startsWith("-") && /^-\s/.test(body)) {
      text = text.replace(/\s+$/, "");
      body = body.slice(1);
    }
    let trimAfter = false;
    if (/\s-$/.test(body)) {
      trimAfter = true;
      body = body.slice(0, -1);
    }
    if (text) out.push({ text });
    out.push({ action: body.trim(), at: open });
    i = close + 2;
    if (trimAfter) {
      const m = /^\s*/.exec(src.slice(i));
      i += m ? m[0].length : 0;
    }
  }
  return out;
}

/** Tokens of an action: strings, parentheses, words. */
function tokens(action: string, at: number): string[] {
  const re = /\s*("(?:[^"\\]|\\.)*"|`[^`]*`|\(|\)|[^\s()]+)/y;
  const out: string[] = [];
  let m: RegExpExecArray | null;
  while ((m = re.exec(action)) !== null) {
    out.push(m[1]);
    if (re.lastIndex >= action.length) break;
  }
  if (out.join("").replace(/\s/g, "") !== action.replace(/\s/g, "")) {
    throw new TemplateError(`cannot read the action "{{ ${action} }}" at offset ${at}`);
  }
  return out;
}

function parseExpr(toks: string[], action: string): Expr {
  let pos = 0;
  const where = `in "{{ ${action} }}"`;
  const term = (): Expr => {
    const t = toks[pos++];
    if (t === undefined) throw new TemplateError(`missing operand ${where}`);
    if (t === "(") {
      const e = call();
      if (toks[pos++] !== ")") throw new TemplateError(`missing ) ${where}`);
      return e;
    }
    if (t.startsWith('"')) return { k: "lit", v: JSON.parse(t) };
    if (t.startsWith("`")) return { k: "lit", v: t.slice(1, -1) };
    if (/^-?\d+(\.\d+)?$/.test(t)) return { k: "lit", v: Number(t) };
    if (t === "true" || t === "false") return { k: "lit", v: t === "true" };
    if (t === "nil") return { k: "lit", v: null };
    if (/^(\.[A-Za-z_][A-Za-z0-9_-]*)+$/.test(t)) return { k: "var", path: t.slice(1).split(".") };
    if (t === "|") throw new TemplateError(`pipelines (|) are not supported ${where}`);
    if (t.startsWith("$")) {
      throw new TemplateError(`template variables ($) are not supported ${where}`);
    }
    if (FUNCTIONS.has(t)) throw new TemplateError(`${t} needs parentheses here ${where}`);
    throw new TemplateError(`"${t}" is not supported ${where}`);
  };
  const call = (): Expr => {
    const t = toks[pos];
    if (t !== undefined && FUNCTIONS.has(t)) {
      pos++;
      const args: Expr[] = [];
      while (pos < toks.length && toks[pos] !== ")") args.push(term());
      const n = args.length;
      if (t === "not" && n !== 1) throw new TemplateError(`not takes one argument ${where}`);
      if ((t === "eq" || t === "ne" || t === "and" || t === "or") && n < 2) {
        throw new TemplateError(`${t} takes at least two arguments ${where}`);
      }
      if (t === "ne" && n !== 2) throw new TemplateError(`ne takes two arguments ${where}`);
      return { k: "call", fn: t, args };
    }
    if (
      t !== undefined && /^[a-z][A-Za-z0-9_]*$/.test(t) && !["true", "false", "nil"].includes(t)
    ) {
      throw new TemplateError(`the function "${t}" is not supported ${where}`);
    }
    return term();
  };
  const e = call();
  if (pos !== toks.length) {
    if (toks[pos] === "|") throw new TemplateError(`pipelines (|) are not supported ${where}`);
    throw new TemplateError(`unexpected "${toks[pos]}" ${where}`);
  }
  return e;
}

/** Parses a template; throws TemplateError naming the first unsupported part. */
export function parseTemplate(src: string): Node[] {
  const items = lex(src);
  let i = 0;
  const block = (inIf: boolean): { nodes: Node[]; end: string } => {
    const nodes: Node[] = [];
    while (i < items.length) {
      const it = items[i++];
      if ("text" in it) {
        nodes.push({ k: "text", s: it.text });
        continue;
      }
      const a = it.action;
      if (a.startsWith("/*")) {
        if (!a.endsWith("*/")) throw new TemplateError(`unclosed comment at offset ${it.at}`);
        continue;
      }
      const word = a.split(/\s+/)[0];
      if (word === "end" || word === "else") {
        if (!inIf) throw new TemplateError(`{{ ${a} }} without {{ if }} at offset ${it.at}`);
        return { nodes, end: a };
      }
      if (word === "if") {
        const branches: { cond: Expr | null; body: Node[] }[] = [];
        let cond: Expr | null = parseExpr(tokens(a.slice(2).trim(), it.at), a);
        for (;;) {
          const { nodes: body, end } = block(true);
          branches.push({ cond, body });
          if (end === "end") break;
          if (end === "else") {
            cond = null;
            const rest = block(true);
            branches.push({ cond: null, body: rest.nodes });
            if (rest.end !== "end") {
              throw new TemplateError(`{{ ${rest.end} }} after {{ else }}: expected {{ end }}`);
            }
            break;
          }
          if (/^else\s+if\s/.test(end)) {
            cond = parseExpr(tokens(end.replace(/^else\s+if\s+/, ""), it.at), end);
            continue;
          }
          throw new TemplateError(`{{ ${end} }} is not supported`);
        }
        nodes.push({ k: "if", branches });
        continue;
      }
      if (["range", "with", "define", "template", "block", "break", "continue"].includes(word)) {
        throw new TemplateError(`{{ ${word} }} is not supported (offset ${it.at})`);
      }
      nodes.push({ k: "out", e: parseExpr(tokens(a, it.at), a) });
    }
    if (inIf) throw new TemplateError("{{ if }} without {{ end }}");
    return { nodes, end: "" };
  };
  return block(false).nodes;
}

function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

function evaluate(e: Expr, vars: unknown): unknown {
  switch (e.k) {
    case "lit":
      return e.v;
    case "var": {
      let v: unknown = vars;
      for (const p of e.path) {
        if (v === null || typeof v !== "object" || !Object.hasOwn(v, p)) return undefined;
        v = (v as Record<string, unknown>)[p];
      }
      return v;
    }
    case "call": {
      const args = e.args;
      switch (e.fn) {
        case "not":
          return !truthy(evaluate(args[0], vars));
        case "and": {
          let last: unknown;
          for (const a of args) if (!truthy(last = evaluate(a, vars))) return last;
          return last;
        }
        case "or": {
          let last: unknown;
          for (const a of args) if (truthy(last = evaluate(a, vars))) return last;
          return last;
        }
        case "eq": {
          const first = evaluate(args[0], vars) ?? "";
          return args.slice(1).some((a) => (evaluate(a, vars) ?? "") === first);
        }
        default: // ne
          return (evaluate(args[0], vars) ?? "") !== (evaluate(args[1], vars) ?? "");
      }
    }
  }
}

function show(v: unknown): string {
  if (v === undefined || v === null) return "";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** Renders parsed nodes; `escape` is applied to every output value. */
export function execute(nodes: Node[], vars: unknown, escape: (s: string) => string): string {
  let out = "";
  for (const n of nodes) {
    if (n.k === "text") out += n.s;
    else if (n.k === "out") out += escape(show(evaluate(n.e, vars)));
    else {
      for (const b of n.branches) {
        if (b.cond === null || truthy(evaluate(b.cond, vars))) {
          out += execute(b.body, vars, escape);
          break;
        }
      }
    }
  }
  return out;
}

/** Why a template cannot be used, or null when it compiles. */
export function templateProblem(src: string): string | null {
  try {
    parseTemplate(src);
    return null;
  } catch (e) {
    if (e instanceof TemplateError) return e.message;
    throw e;
  }
}
