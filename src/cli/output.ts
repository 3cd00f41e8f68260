// How the CLI writes: for programs, one JSON document per run (`--json`); for people, text
// sized to the terminal, coloured only where colour is wanted.

import { styleText } from "node:util";

/** A text format from `util.inspect.colors`, e.g. `"bold"` or `"red"`. */
export type Style = Parameters<typeof styleText>[0];

/** What the output stream can show. */
export interface Terminal {
  /** Columns a line may use. */
  readonly width: number;
  /** Whether ANSI colour codes are welcome. */
  readonly colour: boolean;
  /** Whether the stream is a terminal, where redrawing in place makes sense. */
  readonly tty: boolean;
}

/** Width assumed when the stream is not a terminal and `$COLUMNS` does not say. */
const defaultWidth = 80;

/**
 * What `stream` can show: a terminal's own width, else `$COLUMNS`, else 80. Colour follows
 * the common conventions: `FORCE_COLOR` (anything but `0` or `false`) turns it on even
 * when piped, `NO_COLOR` (non-empty) turns it off, and otherwise a terminal that supports
 * colour gets it.
 */
export function terminal(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): Terminal {
  const tty = stream.isTTY === true;
  const fromEnv = Number(env.COLUMNS);
  const width = tty && stream.columns > 0 ? stream.columns : Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultWidth;
  const force = env.FORCE_COLOR;
  const colour = force !== undefined ? force !== "0" && force !== "false" : !env.NO_COLOR && tty && stream.hasColors();
  return { width, colour, tty };
}

/** `text` in `style` when the terminal takes colour, else as is. */
export function paint(term: Pick<Terminal, "colour">, style: Style | undefined, text: string): string {
  // validateStream: false because the decision was made above (FORCE_COLOR applies when piped).
  return term.colour && style !== undefined && text !== "" ? styleText(style, text, { validateStream: false }) : text;
}

/**
 * Prints `value` as `--json` does everywhere: one JSON document on one line (an array for
 * lists, an object otherwise), dates as ISO 8601 strings.
 */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
