/**
 * What a connector migration hook returns (spec 2.10): every section optional; `labels` and
 * `annotations` follow the normal label rules with `svc/` keys refused; connector-authored
 * notifications may not use the service's own `svc.` keys. Size caps bound the whole output, so a
 * hostile hook cannot make a migration store or apply an unbounded document. Pure.
 */
import { Effect, Schema } from "effect"
import { type ErrorDetail, issueDetails } from "./Errors.ts"
import { keyProblem, UserAnnotations, UserLabels } from "./Labels.ts"
import { ActionUrl, isBuiltInKey, NotificationKey, NotificationLevel, NotificationMetadata } from "./Notification.ts"
import { jsonProblem, jsonProblemIssue, prototypeKeyProblem } from "./StrictInput.ts"

/** Longest hook output accepted, in characters of its JSON text (checked inside the sandbox). */
export const hookOutputMaxChars = 1024 * 1024
/** Most configuration keys one hook may set plus unset. */
export const hookConfigMaxKeys = 1000
/** Longest configuration key. */
export const hookConfigKeyMaxLength = 256
/** Most label (and, separately, annotation) keys one hook may set plus unset. */
export const hookLabelsMaxKeys = 1000
/** Most notifications one hook may set, and separately unset. */
export const hookNotificationsMax = 100
/** Largest `metadata` of one notification, in characters of its JSON text. */
export const hookMetadataMaxChars = 16 * 1024

type Problem = { readonly path: ReadonlyArray<PropertyKey>; readonly issue: string }
const report = (problems: ReadonlyArray<Problem | string>) => (problems.length === 0 ? true : problems)

const ConfigKey = Schema.String.check(
  Schema.makeFilter((key: string) => key.length >= 1 && key.length <= hookConfigKeyMaxLength, {
    message: `a configuration key is 1 to ${hookConfigKeyMaxLength} characters`
  })
)

/** A key to unset: also never one that reaches the prototype. */
const UnsetKey = ConfigKey.check(Schema.makeFilter((key: string) => prototypeKeyProblem(key) ?? true))

/** Keys of a `set` that would reach the prototype when merged (`__proto__`, `constructor`, `prototype`). */
const prototypeKeysOf = (set: Readonly<Record<string, unknown>> | undefined): Array<Problem> =>
  Object.keys(set ?? {}).flatMap((key) => {
    const issue = prototypeKeyProblem(key)
    return issue === undefined ? [] : [{ path: ["set", key], issue }]
  })

/** A configuration value: any JSON (string, number, boolean, array, object or null), nested ≤ 64 levels. */
const ConfigValue = Schema.Json.check(
  Schema.makeFilter((value: Schema.Json) => {
    const problem = jsonProblem(value)
    return problem === undefined ? true : jsonProblemIssue(problem)
  })
)

const noOverlap = (set: Readonly<Record<string, unknown>> | undefined, unset: ReadonlyArray<string> | undefined) => {
  const problems: Array<Problem> = []
  if (set === undefined || unset === undefined) return problems
  unset.forEach((key, index) => {
    if (Object.hasOwn(set, key)) problems.push({ path: ["unset", index], issue: "a key cannot be both set and unset" })
  })
  return problems
}

const countKeys = (
  section: { readonly set?: Readonly<Record<string, unknown>>; readonly unset?: ReadonlyArray<string> },
  max: number
): Array<string> =>
  Object.keys(section.set ?? {}).length + (section.unset?.length ?? 0) > max
    ? [`at most ${max} keys may be set and unset in total`]
    : []

/** `config`: `set` merges values into the configuration, `unset` removes keys (spec 2.10). */
export const HookConfig = Schema.Struct({
  set: Schema.optionalKey(Schema.Record(ConfigKey, ConfigValue)),
  unset: Schema.optionalKey(Schema.Array(UnsetKey))
}).check(
  Schema.makeFilter((section) =>
    report([
      ...countKeys(section, hookConfigMaxKeys),
      ...noOverlap(section.set, section.unset),
      ...prototypeKeysOf(section.set)
    ])
  )
)
export type HookConfig = typeof HookConfig.Type

/** A key a hook may unset from labels or annotations: a valid user key (never under `svc/`). */
const UserKey = Schema.String.check(
  Schema.makeFilter((key: string) => keyProblem(key) ?? prototypeKeyProblem(key) ?? true)
)

/** `labels`: user labels to set (normal label rules, no `svc/` keys) and keys to unset. */
export const HookLabels = Schema.Struct({
  set: Schema.optionalKey(UserLabels),
  unset: Schema.optionalKey(Schema.Array(UserKey))
}).check(
  Schema.makeFilter((section) =>
    report([
      ...countKeys(section, hookLabelsMaxKeys),
      ...noOverlap(section.set, section.unset),
      ...prototypeKeysOf(section.set)
    ])
  )
)
export type HookLabels = typeof HookLabels.Type

/** `annotations`: annotations to set (valid keys, no `svc/`, ≤ 256 KB) and keys to unset. */
export const HookAnnotations = Schema.Struct({
  set: Schema.optionalKey(UserAnnotations),
  unset: Schema.optionalKey(Schema.Array(UserKey))
}).check(
  Schema.makeFilter((section) =>
    report([
      ...countKeys(section, hookLabelsMaxKeys),
      ...noOverlap(section.set, section.unset),
      ...prototypeKeysOf(section.set)
    ])
  )
)
export type HookAnnotations = typeof HookAnnotations.Type

/** A notification key a connector may use: a valid key outside the service's own `svc.` keys. */
export const ConnectorNotificationKey = NotificationKey.check(
  Schema.makeFilter((key: string) => !isBuiltInKey(key), {
    message: "notification keys starting with 'svc.' are reserved for the service's own notices"
  })
)

/**
 * A notice a hook raises, keyed per connection (spec 2.10, 2.11). `message` may be omitted (an
 * empty message); `metadata` is a JSON object of at most {@link hookMetadataMaxChars} characters.
 */
export const HookNotification = Schema.Struct({
  key: ConnectorNotificationKey,
  level: NotificationLevel,
  title: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  message: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(2000))),
  action_url: Schema.optionalKey(ActionUrl),
  metadata: Schema.optionalKey(
    NotificationMetadata.check(
      Schema.makeFilter(
        (metadata: Readonly<Record<string, unknown>>) =>
          (JSON.stringify(metadata)?.length ?? 0) <= hookMetadataMaxChars,
        { message: `metadata is at most ${hookMetadataMaxChars} characters of JSON` }
      ),
      Schema.makeFilter((metadata: Readonly<Record<string, unknown>>) => {
        const problem = jsonProblem(metadata)
        return problem === undefined ? true : jsonProblemIssue(problem)
      })
    )
  )
})
export type HookNotification = typeof HookNotification.Type

const uniqueKeys = (entries: ReadonlyArray<{ readonly key: string }>, what: string): Array<Problem> => {
  const seen = new Set<string>()
  const problems: Array<Problem> = []
  entries.forEach((entry, index) => {
    if (seen.has(entry.key)) problems.push({ path: [index, "key"], issue: `the ${what} key appears twice` })
    seen.add(entry.key)
  })
  return problems
}

/** `notifications`: notices to raise or replace, and keys of earlier notices to remove. */
export const HookNotifications = Schema.Struct({
  set: Schema.optionalKey(
    Schema.Array(HookNotification)
      .check(Schema.isMaxLength(hookNotificationsMax))
      .check(Schema.makeFilter((entries) => report(uniqueKeys(entries, "notification"))))
  ),
  unset: Schema.optionalKey(
    Schema.Array(Schema.Struct({ key: ConnectorNotificationKey }))
      .check(Schema.isMaxLength(hookNotificationsMax))
      .check(Schema.makeFilter((entries) => report(uniqueKeys(entries, "notification"))))
  )
}).check(
  Schema.makeFilter((section) => {
    const setKeys = new Set((section.set ?? []).map((entry) => entry.key))
    const problems: Array<Problem> = []
    section.unset?.forEach((entry, index) => {
      if (setKeys.has(entry.key))
        problems.push({ path: ["unset", index, "key"], issue: "a key cannot be both set and unset" })
    })
    return report(problems)
  })
)
export type HookNotifications = typeof HookNotifications.Type

/** The result of one migration hook (spec 2.10): every section optional, unknown sections refused. */
export const HookResult = Schema.Struct({
  config: Schema.optionalKey(HookConfig),
  labels: Schema.optionalKey(HookLabels),
  annotations: Schema.optionalKey(HookAnnotations),
  notifications: Schema.optionalKey(HookNotifications)
}).annotate({ identifier: "HookResult" })
export type HookResult = typeof HookResult.Type

const decode = Schema.decodeUnknownEffect(HookResult)
const strict = { onExcessProperty: "error", errors: "all" } as const

/**
 * Decodes a hook's output (already parsed from JSON): the result, or field-level problems under
 * `output` that name paths and rules, never the offending values (they may derive from secrets).
 */
export const decodeHookResult = (output: unknown): Effect.Effect<HookResult, ReadonlyArray<ErrorDetail>> =>
  decode(output, strict).pipe(Effect.mapError((error) => issueDetails(error.issue, "output")))
