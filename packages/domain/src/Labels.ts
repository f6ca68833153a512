/**
 * Labels and annotations (spec 2.3, 2.4, 8.1): key and value rules, the reserved `svc/` prefix,
 * implicit system labels and carry-forward from parents. Pure.
 */
import { Schema } from "effect"

/** The reserved prefix of system labels (spec 2.3). */
export const systemPrefix = "svc/"

/** The resource-type token `<rt>` of system label keys (spec 2.3). */
export type ResourceToken = "ns" | "act" | "cxr" | "cxn" | "key" | "rl" | "wh"

/** spec 8.1: label key prefix at most 253 characters, name at most 63. */
export const labelPrefixMaxLength = 253
export const labelNameMaxLength = 63
/** spec 8.1: label value at most 63 characters. */
export const labelValueMaxLength = 63
/** spec 8.1: annotations at most 256 KB per resource (UTF-8 bytes of keys and values). */
export const annotationsMaxBytes = 256 * 1024

const dnsLabel = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/
const keyName = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/
const labelValue = /^[A-Za-z0-9._-]*$/

/** True for keys under the reserved `svc/` prefix. */
export const isSystemKey = (key: string): boolean => key.startsWith(systemPrefix)

/**
 * Why `key` is not a valid user-writable label or annotation key, or `undefined` when it is:
 * an optional DNS-subdomain prefix (≤ 253) and `/`, then a name (≤ 63) of alphanumerics and
 * `-_.` that starts and ends alphanumeric. Keys under `svc/` are reserved (spec 2.3).
 */
export const keyProblem = (key: string): string | undefined => {
  if (isSystemKey(key)) return "the svc/ prefix is reserved for system labels"
  const slash = key.indexOf("/")
  const prefix = slash === -1 ? undefined : key.slice(0, slash)
  const name = slash === -1 ? key : key.slice(slash + 1)
  if (prefix !== undefined) {
    if (prefix.length === 0) return "the key prefix is empty"
    if (prefix.length > labelPrefixMaxLength) return `the key prefix is longer than ${labelPrefixMaxLength} characters`
    if (!prefix.split(".").every((part) => part.length <= 63 && dnsLabel.test(part))) {
      return "the key prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.')"
    }
  }
  if (name.length === 0) return "the key name is empty"
  if (name.length > labelNameMaxLength) return `the key name is longer than ${labelNameMaxLength} characters`
  if (!keyName.test(name)) {
    return "the key name must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
  }
  return undefined
}

/** Why `value` is not a valid label value, or `undefined` (spec 8.1). */
export const labelValueProblem = (value: string): string | undefined => {
  if (value.length > labelValueMaxLength) return `a label value is at most ${labelValueMaxLength} characters`
  if (!labelValue.test(value)) return "a label value may contain only alphanumerics, '-', '_' and '.'"
  return undefined
}

const utf8 = new TextEncoder()

/** Size of an annotation map as counted against the 256 KB cap: UTF-8 bytes of keys and values. */
export const annotationsSize = (annotations: Readonly<Record<string, string>>): number => {
  let size = 0
  for (const [key, value] of Object.entries(annotations)) size += utf8.encode(key).length + utf8.encode(value).length
  return size
}

type Problem = { readonly path: ReadonlyArray<PropertyKey>; readonly issue: string }

const StringMap = Schema.Record(Schema.String, Schema.String)

/** A user-written label map: every key and value valid, no `svc/` keys (spec 2.3). */
export const UserLabels = StringMap.check(
  Schema.makeFilter((labels: Readonly<Record<string, string>>) => {
    const problems: Array<Problem> = []
    for (const [key, value] of Object.entries(labels)) {
      const problem = keyProblem(key) ?? labelValueProblem(value)
      if (problem !== undefined) problems.push({ path: [key], issue: problem })
    }
    return problems.length === 0 ? true : problems
  })
)
export type UserLabels = typeof UserLabels.Type

/** A user-written annotation map: valid keys, no `svc/` keys, at most 256 KB in total (spec 2.3). */
export const UserAnnotations = StringMap.check(
  Schema.makeFilter((annotations: Readonly<Record<string, string>>) => {
    const problems: Array<Problem | string> = []
    for (const key of Object.keys(annotations)) {
      const problem = keyProblem(key)
      if (problem !== undefined) problems.push({ path: [key], issue: problem })
    }
    if (annotationsSize(annotations) > annotationsMaxBytes) {
      problems.push(`annotations are limited to ${annotationsMaxBytes} bytes per resource`)
    }
    return problems.length === 0 ? true : problems
  })
)
export type UserAnnotations = typeof UserAnnotations.Type

/** Labels as returned: user labels plus system labels. */
export const Labels = StringMap
export type Labels = Readonly<Record<string, string>>

/** The entries of `labels` that are not under `svc/` (the user-owned set). */
export const userLabelsOf = (labels: Labels): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(labels)) if (!isSystemKey(key)) out[key] = value
  return out
}

/** The entries of `labels` under `svc/`. */
export const systemLabelsOf = (labels: Labels): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(labels)) if (isSystemKey(key)) out[key] = value
  return out
}

/** The implicit identity labels `svc/<rt>/-/id|name|ns` (spec 2.3). */
export const implicitLabels = (
  rt: ResourceToken,
  identity: { readonly id: string; readonly name: string; readonly namespace: string }
): Record<string, string> => ({
  [`${systemPrefix}${rt}/-/id`]: identity.id,
  [`${systemPrefix}${rt}/-/name`]: identity.name,
  [`${systemPrefix}${rt}/-/ns`]: identity.namespace
})

/**
 * What a parent passes on to a child (spec 2.4 rules 1–2): its user labels re-keyed as
 * `svc/<parent_rt>/<key>`, and its labels already under `svc/` unchanged.
 */
export const carriedFrom = (parentRt: ResourceToken, parentLabels: Labels): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(parentLabels)) {
    out[isSystemKey(key) ? key : `${systemPrefix}${parentRt}/${key}`] = value
  }
  return out
}

/**
 * System labels a resource carries besides its identity: a connector projects its current
 * definition type as `svc/cxr/type`, which its connections inherit (spec 2.6 example).
 */
export const ownSystemLabels = (rt: ResourceToken, row: { readonly type?: string | undefined }): Labels =>
  rt === "cxr" && row.type !== undefined ? { [`${systemPrefix}cxr/type`]: row.type } : {}

/** A parent of a resource in the carry-forward hierarchy (spec 2.4 table). */
export interface LabelParent {
  readonly rt: ResourceToken
  readonly labels: Labels
}

/**
 * The full label set of a resource (spec 2.3, 2.4): carried labels of its parents (later parents
 * win on a clash, so pass the more distant parent first), then its own implicit labels, then its
 * user labels. Deterministic: equal inputs give equal outputs with keys in sorted order.
 */
export const materializeLabels = (input: {
  readonly rt: ResourceToken
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly userLabels: Labels
  readonly parents: ReadonlyArray<LabelParent>
  /** Further system labels of the resource itself (e.g. a connector's `svc/cxr/type`). */
  readonly system?: Labels | undefined
}): Record<string, string> => {
  const merged: Record<string, string> = {}
  for (const parent of input.parents) Object.assign(merged, carriedFrom(parent.rt, parent.labels))
  Object.assign(merged, input.system ?? {}, implicitLabels(input.rt, input), userLabelsOf(input.userLabels))
  return sortKeys(merged)
}

/** A copy of `record` with keys in code-point order (stable JSON, stable comparisons). */
export const sortKeys = (record: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const key of Object.keys(record).sort()) out[key] = record[key]!
  return out
}

/** True when two label maps hold exactly the same entries. */
export const sameLabels = (left: Labels, right: Labels): boolean => {
  const leftKeys = Object.keys(left)
  if (leftKeys.length !== Object.keys(right).length) return false
  return leftKeys.every((key) => Object.hasOwn(right, key) && right[key] === left[key])
}
