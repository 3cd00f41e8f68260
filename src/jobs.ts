/**
 * Typed jobs: one definition of an application's job kinds — each kind's payload type,
 * its settings and, if wanted, a schema checked at enqueue — from which `enqueue`,
 * `enqueueMany`, handlers, schedules, `getJob` and `errand/testing` are typed.
 */
import { ValidationError } from "./errors.js";
import type { Job } from "./job.js";
import { type KindOptions, resolveKinds } from "./options.js";
import { type Json, member } from "./payload.js";
import { checkKeys } from "./validate.js";

/**
 * `T` where it survives a JSON round trip, with `never` in place of every part that does
 * not: `Date`, `Map` and other class instances, functions, `bigint`, `symbol`, and
 * `undefined` where a value is required (an optional property may be left out). A payload
 * type `T` is JSON when `T` is assignable to `JsonPayload<T>`; unlike {@link Json}, this
 * accepts interfaces. `unknown` stays `unknown`: a payload checked at run time only.
 */
export type JsonPayload<T> = unknown extends T
  ? T
  : T extends Json
    ? T
    : T extends bigint | symbol | undefined | Date | ((...args: never[]) => unknown) | (abstract new (...args: never[]) => unknown)
      ? never
      : T extends object
        ? { [K in keyof T]: JsonPayload<T[K]> }
        : never;

/**
 * The constraint on a job map: kind → payload type, each payload JSON. A map with a `Date`,
 * a function or a required `undefined` in a payload fails it where the map is used
 * (`Errand.open<Jobs>()`, `Errand<Jobs>`), naming the property.
 *
 * @example
 * ```ts
 * interface Jobs {
 *   send_welcome_email: { userId: number };
 *   resize_avatar: { userId: number; sizes: number[] };
 * }
 * const errand = await Errand.open<Jobs>();
 * ```
 */
export type JobMap<Jobs> = JsonMembers<Jobs>;

/**
 * {@link JsonPayload} applied to each member of `T` (each element of an array). Usable
 * as a constraint (`T extends JsonMembers<T>`), where the conditional type is not; a
 * `T` that is itself a `Date`, function or `undefined` passes it, and is caught by
 * `defineJobs` instead.
 */
export type JsonMembers<T> = { readonly [K in keyof T]: JsonPayload<T[K]> };

/** The job map of an untyped errand (plain JavaScript, or TypeScript without a map): any kind, payloads checked at run time. */
export type UntypedJobs = Readonly<Record<string, unknown>>;

/** A job map's kinds, as strings. */
export type Kind<Jobs> = keyof Jobs & string;

/**
 * The union of an object type's property types: `ByKind<{ [K in Kind<Jobs>]: … }>` builds
 * a union with one member per kind. A conditional type on purpose: through it the
 * compiler compares `Errand<Jobs>`, `Schedules<Jobs>` and the like member by member, so
 * a typed errand is accepted wherever an untyped one is (a plain `M[keyof M]` makes it
 * compare their type arguments, and `keyof` then forbids it).
 */
export type ByKind<M> = M extends unknown ? M[keyof M] : never;

/**
 * A job as read back, its `kind` and `payload` typed together: `if (job.kind === "x")`
 * narrows the payload to kind `x`'s.
 */
export type JobOf<Jobs, K extends Kind<Jobs> = Kind<Jobs>> = ByKind<{ [P in K]: Job<Jobs[P], P> }>;

/**
 * A `payload` property that may be left out (it defaults to `{}`) when `{}` is a valid
 * payload of the kind, and must be given otherwise.
 */
export type PayloadField<Payload> = Record<string, never> extends Payload ? { readonly payload?: Payload } : { readonly payload: Payload };

/**
 * A pattern of a payload, for a containment match (PostgreSQL `@>`): any part of it,
 * nested. `{ orderId: 1042 }` matches `{ orderId: 1042, total: 5 }`.
 */
export type PayloadPattern<Payload> = unknown extends Payload
  ? Json
  : Payload extends readonly (infer Item)[]
    ? readonly PayloadPattern<Item>[]
    : Payload extends object
      ? { readonly [K in keyof Payload]?: PayloadPattern<Payload[K]> }
      : Payload;

// ---------------------------------------------------------------------------------------
// Standard Schema (https://standardschema.dev), version 1: the interface zod, valibot,
// arktype and others implement. Written out here, so errand depends on none of them.

/** A schema any Standard Schema library can give: zod 3.24+, valibot 1, arktype 2, … */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaProps<Input, Output>;
}

/** The `~standard` property of a {@link StandardSchemaV1}. */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  readonly version: 1;
  /** The library that made the schema, e.g. `"zod"`. */
  readonly vendor: string;
  /** Checks a value: its output, or the issues found. May be asynchronous. */
  readonly validate: (value: unknown) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  /** The input and output types, for inference only. */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

/** What a schema's `validate` returns. */
export type StandardSchemaResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly StandardSchemaIssue[] };

/** One problem a schema found. */
export interface StandardSchemaIssue {
  readonly message: string;
  /** Where: property keys and array indexes from the root, plain or as `{ key }`. */
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
}

/** The type a schema produces: its declared output type, else what its `validate` resolves to. */
export type SchemaOutput<Schema extends StandardSchemaV1> =
  NonNullable<Schema["~standard"]["types"]> extends { readonly output: infer Output }
    ? Output
    : Extract<Awaited<ReturnType<Schema["~standard"]["validate"]>>, { readonly value: unknown }>["value"];

// ---------------------------------------------------------------------------------------
// defineJobs

declare const payloadType: unique symbol;

/** A payload type without a runtime check: what {@link json} returns. */
export interface PayloadType<Payload> {
  /** Marks this as a type only; the value is always `"json"`. */
  readonly "~errand": "json";
  /** The payload type, for inference only (never set). */
  readonly [payloadType]?: Payload;
}

/**
 * A kind's payload type, checked by the compiler only: `json<{ userId: number }>()`.
 * A type that is not JSON (a `Date`, a function, a `bigint` in it) is a compile error
 * here, naming the property.
 */
export function json<Payload extends JsonMembers<Payload>>(): PayloadType<Payload> {
  return jsonMarker as PayloadType<Payload>;
}

const jsonMarker: PayloadType<unknown> = Object.freeze({ "~errand": "json" });

/** One kind in {@link defineJobs}: its payload (a type from {@link json}, or a schema) and its settings. */
export interface KindDefinition extends KindOptions {
  /**
   * The payload: `json<T>()` for a type the compiler checks, or a Standard Schema (zod,
   * valibot, arktype, …) that `enqueue` also checks at run time; its output is what is stored.
   */
  readonly payload: PayloadType<unknown> | StandardSchemaV1;
}

/** The payload type a kind's definition declares. */
export type DefinedPayload<Definition> = Definition extends { readonly payload: infer Payload }
  ? Payload extends PayloadType<infer T>
    ? T
    : Payload extends StandardSchemaV1
      ? SchemaOutput<Payload>
      : never
  : never;

/** The job map a {@link defineJobs} argument declares. */
export type DefinedJobs<Definitions> = { -readonly [K in keyof Definitions]: DefinedPayload<Definitions[K]> } & {};

declare const jobMap: unique symbol;

/**
 * Job kinds, typed: what {@link defineJobs} returns and `Errand.open({ jobs })` takes.
 * `Jobs` is the job map (kind → payload type) the rest of the API is typed by.
 */
export interface JobsDefinition<Jobs> {
  /** Settings by kind (attempts, backoff, lease, priority), as `ErrandOptions.kinds` takes them. */
  readonly kinds: Readonly<Record<string, KindOptions>>;
  /** The schemas by kind, for the kinds declared with one. */
  readonly schemas: ReadonlyMap<string, StandardSchemaV1>;
  /** The job map, for inference only (never set). */
  readonly [jobMap]?: Jobs;
}

/**
 * The job map of a {@link JobsDefinition}: `type Jobs = JobsOf<typeof jobs>` names it for
 * `Errand<Jobs>`, `Handlers<Jobs>` and the like.
 */
export type JobsOf<Definition> = Definition extends JobsDefinition<infer Jobs> ? Jobs : never;

/** A compile error on each kind whose schema's output is not JSON. */
type CheckedDefinitions<Definitions> = {
  readonly [K in keyof Definitions]: DefinedPayload<Definitions[K]> extends JsonPayload<DefinedPayload<Definitions[K]>>
    ? unknown
    : { readonly payload: "this kind's payload type is not JSON (a Date, a function, a bigint or a required undefined in it)" };
};

const settingKeys = ["payload", "maxAttempts", "retry", "leaseMs", "priority", "queue", "concurrencyKey"];

/**
 * Declares an application's job kinds once: each kind's payload type and settings. Pass
 * the result to `Errand.open({ jobs })` (and `openTestErrand({ jobs })`), and enqueue,
 * handlers, schedules, `getJob` and the testing helpers are typed by it. A kind whose
 * `payload` is a Standard Schema is also checked at enqueue: a payload it refuses is a
 * `ValidationError` naming the field (`payload.userId: …`), and nothing is written.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { defineJobs, json } from "errand";
 *
 * export const jobs = defineJobs({
 *   send_welcome_email: { payload: json<{ userId: number }>(), maxAttempts: 5 },
 *   resize_avatar: { payload: z.object({ userId: z.number().int(), sizes: z.array(z.number()) }), leaseMs: 60_000 },
 * });
 * const errand = await Errand.open({ jobs });
 * ```
 */
export function defineJobs<const Definitions extends { readonly [kind: string]: KindDefinition }>(
  definitions: Definitions & CheckedDefinitions<Definitions>,
): JobsDefinition<DefinedJobs<Definitions>> {
  if (typeof definitions !== "object" || definitions === null || Array.isArray(definitions)) throw new ValidationError("jobs", "must be an object mapping kind → { payload, …settings }");
  const kinds: Record<string, KindOptions> = {};
  const schemas = new Map<string, StandardSchemaV1>();
  for (const [kind, definition] of Object.entries(definitions as Record<string, KindDefinition>)) {
    const field = `jobs.${kind}`;
    if (typeof definition !== "object" || definition === null) throw new ValidationError(field, "must be an object: { payload, …settings }");
    checkKeys(definition, field, settingKeys);
    const { payload, ...settings } = definition;
    if (isSchema(payload)) schemas.set(kind, payload);
    // By its mark, not its identity: a second copy of errand in an app makes its own marker.
    else if ((payload as Partial<PayloadType<unknown>> | null)?.["~errand"] !== "json") throw new ValidationError(`${field}.payload`, "must be json<T>() or a Standard Schema (zod, valibot, arktype, …)");
    kinds[kind] = settings;
  }
  resolveKinds(kinds, "jobs"); // a bad setting fails here, where it is written, and not only at open
  return { kinds: Object.freeze(kinds), schemas };
}

function isSchema(value: unknown): value is StandardSchemaV1 {
  if (typeof value !== "object" && typeof value !== "function") return false;
  if (value === null) return false;
  const props = (value as { "~standard"?: { version?: unknown; validate?: unknown } })["~standard"];
  return typeof props === "object" && props !== null && props.version === 1 && typeof props.validate === "function";
}

/** What {@link validatePayloads} needs of a job spec: read loosely, since the specs are not validated yet. */
interface SpecToValidate {
  readonly kind?: unknown;
  readonly payload?: unknown;
}

/**
 * Checks the payloads of kinds with a schema, before anything is written. Returns the
 * specs with each checked payload replaced by the schema's output (its defaults applied,
 * unknown keys stripped — whatever the schema does), or `specs` itself when no spec's kind
 * has a schema. The first issue found is a {@link ValidationError} naming its path after
 * `payloadField(i)`: `payload.userId` for one job, `jobs[3].payload.userId` in a batch.
 */
export async function validatePayloads<Spec extends object>(
  specs: readonly Spec[],
  schemas: ReadonlyMap<string, StandardSchemaV1>,
  payloadField: (index: number) => string,
): Promise<readonly Spec[]> {
  let checked: Spec[] | undefined;
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as SpecToValidate | null | undefined;
    // Malformed specs are left for the encoder, whose errors name them.
    if (typeof spec !== "object" || spec === null || typeof spec.kind !== "string") continue;
    const schema = schemas.get(spec.kind);
    if (!schema) continue;
    const result = await schema["~standard"].validate(spec.payload === undefined ? {} : spec.payload);
    if (result.issues) throw issueError(result.issues, payloadField(i));
    checked ??= [...specs];
    checked[i] = { ...spec, payload: result.value } as Spec;
  }
  return checked ?? specs;
}

function issueError(issues: readonly StandardSchemaIssue[], field: string): ValidationError {
  const [first] = issues;
  const path = (first?.path ?? []).map((segment) => {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    return typeof key === "number" ? `[${key}]` : typeof key === "symbol" ? `[${key.toString()}]` : member(key);
  });
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? "s" : ""})` : "";
  return new ValidationError(`${field}${path.join("")}`, `${first?.message ?? "is refused by the kind's schema"}${more}`);
}
