/**
 * HTML built from tagged templates: every interpolated value is escaped unless it is
 * already {@link Html} (the result of another template or of {@link unsafeRaw}). Nothing
 * the database returns can reach the page as markup.
 */

/** A fragment of markup that is already safe to emit. */
export class Html {
  /** The markup. */
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  /** The markup as a string. */
  toString(): string {
    return this.value;
  }
}

/** What a template accepts: text (escaped), numbers, markup, lists, or nothing. */
export type Child = Html | string | number | boolean | null | undefined | readonly Child[];

const entities: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for use in element content and quoted attribute values. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => entities[ch]!);
}

function render(child: Child): string {
  if (child === null || child === undefined || child === false || child === true) return "";
  if (child instanceof Html) return child.value;
  if (Array.isArray(child)) return (child as readonly Child[]).map(render).join("");
  return escapeHtml(String(child));
}

/**
 * The template tag.
 *
 * @example
 * ```ts
 * html`<td>${job.kind}</td>`; // a kind of "<b>" shows as text
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: Child[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Marks trusted, constant markup (never data) as safe. */
export function unsafeRaw(markup: string): Html {
  return new Html(markup);
}
