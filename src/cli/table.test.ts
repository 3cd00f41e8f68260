import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { terminal } from "./output.js";
import { type Column, renderTable } from "./table.js";

interface Row {
  readonly id: string;
  readonly kind: string;
  readonly count: number;
  readonly error: string;
}

const columns: readonly Column<Row>[] = [
  { header: "ID", cell: (r) => r.id, right: true },
  { header: "KIND", cell: (r) => r.kind, minWidth: 12 },
  { header: "RECENT COUNT", cell: (r) => String(r.count), right: true, hideRank: 1 },
  { header: "LAST ERROR", cell: (r) => r.error, minWidth: 20, style: () => "red" },
];

const rows: Row[] = [
  { id: "1", kind: "send_receipt", count: 3, error: "Error: connect ECONNREFUSED 127.0.0.1:5432" },
  { id: "1042", kind: "billing.invoice.send_overdue_reminder_email", count: 12_000, error: `TypeError: ${"cannot read properties of undefined ".repeat(10)}` },
];

const plain = { width: 80, colour: false };
const chars = (line: string) => Array.from(stripVTControlCharacters(line)).length;

describe("renderTable", () => {
  it("prints everything, aligned on one heading line, when the terminal is wide enough", () => {
    const lines = renderTable(columns, rows, { width: 1000, colour: false });
    expect(lines[0]).toBe(`  ID  ${"KIND".padEnd(43)}  RECENT COUNT  LAST ERROR`);
    expect(lines[2]).toBe(`1042  billing.invoice.send_overdue_reminder_email         12000  ${rows[1]!.error.trimEnd()}`);
    expect(lines).toHaveLength(3);
  });

  it("fits 80 columns: long cells are cut with an ellipsis, widest first", () => {
    const lines = renderTable(columns, rows, plain);
    for (const line of lines) expect(chars(line)).toBeLessThanOrEqual(80);
    expect(lines[1]).toMatch(/^ {3}1 {2}send_receipt/);
    expect(lines[2]).toMatch(/…$/);
    // Every column still shows, so no note.
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain("RECENT COUNT");
  });

  it("breaks headings, then hides ranked columns with a note, when cutting is not enough", () => {
    expect(renderTable(columns, rows, { width: 58, colour: false })[0]).toBe("  ID  KIND              RECENT COUNT  LAST ERROR");
    const twoLines = renderTable(columns, rows, { width: 52, colour: false });
    expect(twoLines.slice(0, 2)).toEqual([" ".repeat(24) + "RECENT  LAST", "  ID  KIND               COUNT  ERROR"]);
    expect(twoLines[3]).toBe("1042  billing.invoice…   12000  TypeError: cannot r…");
    for (const line of twoLines) expect(chars(line)).toBeLessThanOrEqual(52);

    const hidden = renderTable(columns, rows, { width: 44, colour: false });
    expect(hidden.at(-1)).toBe("(hidden at 44 columns: RECENT COUNT; --json…");
    expect(hidden.join("\n")).not.toContain("12000");
    for (const line of hidden) expect(chars(line)).toBeLessThanOrEqual(44);
  });

  it("overflows rather than hide a column without a rank", () => {
    const lines = renderTable(columns, rows, { width: 20, colour: false });
    expect(lines.slice(2)).toEqual(["   1  send_receipt  Error: connect ECON…", "1042  billing.inv…  TypeError: cannot r…", "(hidden at 20 colum…"]);
  });

  it("escapes control characters, so a cell cannot break the line or drive the terminal", () => {
    const [, line] = renderTable(columns, [{ id: "7", kind: "k\tx", count: 0, error: "one\ntwo\r\u001b[31m\u009b" }], { width: 200, colour: false });
    expect(line).toBe(" 7  k x              0  one\\ntwo\\r\\u001b[31m\\u009b");
  });

  it("colours headings and styled cells without counting the escapes as width", () => {
    const coloured = renderTable(columns, rows, { width: 80, colour: true });
    expect(coloured[0]).toContain("\u001b[1mKIND\u001b[22m");
    expect(coloured[1]).toContain("\u001b[31mError: connect");
    expect(coloured.map(stripVTControlCharacters)).toEqual(renderTable(columns, rows, plain));
  });
});

describe("terminal", () => {
  const piped = { isTTY: false } as NodeJS.WriteStream;
  const tty = { isTTY: true, columns: 132, hasColors: () => true } as unknown as NodeJS.WriteStream;

  it("is 80 columns without colour when piped, unless $COLUMNS or FORCE_COLOR say otherwise", () => {
    expect(terminal(piped, {})).toEqual({ width: 80, colour: false, tty: false });
    expect(terminal(piped, { COLUMNS: "120", FORCE_COLOR: "1" })).toEqual({ width: 120, colour: true, tty: false });
    expect(terminal(piped, { COLUMNS: "wide", FORCE_COLOR: "0" })).toEqual({ width: 80, colour: false, tty: false });
  });

  it("takes a terminal's own width and colour, unless NO_COLOR", () => {
    expect(terminal(tty, { COLUMNS: "80" })).toEqual({ width: 132, colour: true, tty: true });
    expect(terminal(tty, { NO_COLOR: "1" })).toMatchObject({ colour: false });
    expect(terminal(tty, { NO_COLOR: "" })).toMatchObject({ colour: true });
  });
});
