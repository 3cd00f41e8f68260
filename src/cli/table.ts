// The one table renderer of the CLI (stats, dead list, schedules): columns aligned, fitted
// to the terminal's width, bold headings when colour is on.

import { type Style, type Terminal, paint } from "./output.js";

/** One column of a {@link renderTable} table. */
export interface Column<Row> {
  /** The heading. When the table is tight, a heading with a space may take two lines. */
  readonly header: string;
  /** The cell's text; control characters are shown escaped (`\n`, `\u001b`). */
  readonly cell: (row: Row) => string;
  /** Right-aligned, for numbers. */
  readonly right?: boolean;
  /** Cells may be cut to this width, ending in "…", when the table is too wide (names, errors). */
  readonly minWidth?: number;
  /**
   * Columns with a rank are hidden, highest rank first, while the table is too wide even
   * with cut cells; a note under the table names them. Columns without one always show.
   */
  readonly hideRank?: number;
  /** Colour for a cell, when the terminal takes colour. */
  readonly style?: (row: Row) => Style | undefined;
}

const gap = "  ";

/**
 * `rows` as an aligned table of at most `term.width` columns when it can be (lines, without
 * newlines): first headings break over two lines, then long cells are cut down to their
 * column's `minWidth`, then ranked columns are hidden. A table that still does not fit
 * (a terminal narrower than its essential columns) overflows rather than losing them.
 */
export function renderTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[], term: Pick<Terminal, "width" | "colour">): string[] {
  const cells = rows.map((row) => columns.map((column) => clean(column.cell(row))));
  const widest = columns.map((_, i) => Math.max(0, ...cells.map((row) => width(row[i]!))));
  const oneLine = columns.map((column) => [column.header]);
  const twoLines = columns.map((column) => splitHeader(column.header));
  const byRank = columns.map((column, i) => ({ i, rank: column.hideRank })).filter((c): c is { i: number; rank: number } => c.rank !== undefined).sort((a, b) => b.rank - a.rank);

  const hidden = new Set<number>();
  let layout = fit(columns, widest, oneLine, hidden, term.width);
  for (let k = 0; !layout.fits; k++) {
    layout = fit(columns, widest, twoLines, hidden, term.width);
    if (layout.fits || k === byRank.length) break; // nothing left to hide: overflow, every cell at its narrowest
    hidden.add(byRank[k]!.i);
    layout = fit(columns, widest, oneLine, hidden, term.width);
  }
  const { widths, headers } = layout;

  const shown = columns.map((_, i) => i).filter((i) => !hidden.has(i));
  const line = (texts: (i: number) => string, style: (i: number) => Style | undefined) =>
    shown
      .map((i) => {
        const text = cut(texts(i), widths[i]!);
        const pad = " ".repeat(widths[i]! - width(text));
        return columns[i]!.right ? pad + paint(term, style(i), text) : paint(term, style(i), text) + pad;
      })
      .join(gap)
      .trimEnd();
  const lines: string[] = [];
  const headerLines = Math.max(...shown.map((i) => headers[i]!.length));
  for (let n = 0; n < headerLines; n++) {
    lines.push(line((i) => headers[i]![n - (headerLines - headers[i]!.length)] ?? "", () => "bold"));
  }
  rows.forEach((row, r) => lines.push(line((i) => cells[r]![i]!, (i) => columns[i]!.style?.(row))));
  if (hidden.size > 0) {
    const names = columns.filter((_, i) => hidden.has(i)).map((column) => column.header);
    lines.push(cut(`(hidden at ${term.width} columns: ${names.join(", ")}; --json has all)`, term.width));
  }
  return lines;
}

/**
 * Column widths for `limit` with the hidden columns left out (their width is 0). Cut
 * columns shrink widest first, so the longest cells lose the most; `fits` is false when
 * even their narrowest is too wide.
 */
function fit<Row>(columns: readonly Column<Row>[], widest: readonly number[], headers: readonly string[][], hidden: ReadonlySet<number>, limit: number): { widths: number[]; headers: readonly string[][]; fits: boolean } {
  const full = columns.map((_, i) => (hidden.has(i) ? 0 : Math.max(widest[i]!, ...headers[i]!.map(width))));
  const least = columns.map((column, i) => (column.minWidth === undefined ? full[i]! : Math.min(full[i]!, Math.max(column.minWidth, ...headers[i]!.map(width)))));
  const widths = [...full];
  const total = () => widths.reduce((sum, x) => sum + x, 0) + gap.length * (columns.length - hidden.size - 1);
  let excess = total() - limit;
  while (excess > 0) {
    const shrinkable = widths.map((_, i) => i).filter((i) => widths[i]! > least[i]!);
    if (shrinkable.length === 0) break;
    const top = shrinkable.reduce((a, b) => (widths[b]! > widths[a]! ? b : a));
    const next = Math.max(least[top]!, ...shrinkable.filter((i) => i !== top).map((i) => widths[i]!));
    const step = Math.min(excess, Math.max(1, widths[top]! - next));
    widths[top] = widths[top]! - step;
    excess -= step;
  }
  return { widths, headers, fits: total() <= limit };
}

/** A heading split at the space that makes its longer line shortest, or as is. */
function splitHeader(header: string): string[] {
  let best = [header];
  for (let at = header.indexOf(" "); at > 0; at = header.indexOf(" ", at + 1)) {
    const parts = [header.slice(0, at), header.slice(at + 1)];
    if (Math.max(...parts.map(width)) < Math.max(...best.map(width))) best = parts;
  }
  return best;
}

/** Control characters escaped, so a cell is one line and cannot move the cursor or recolour the terminal. */
function clean(text: string): string {
  const named: Readonly<Record<string, string>> = { "\t": " ", "\n": "\\n", "\r": "\\r" };
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => named[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Columns a text takes: one per code point. Wide (East Asian) characters count as one. */
function width(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** `text` cut to `max` columns, ending in "…" when cut. */
function cut(text: string, max: number): string {
  if (width(text) <= max) return text;
  return max <= 0 ? "" : `${Array.from(text).slice(0, max - 1).join("")}…`;
}
