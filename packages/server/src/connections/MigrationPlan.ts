/**
 * The pure parts of a version migration (spec 2.10, 4.3 rules 2–4): hook results applied in
 * sequence to the connection's configuration, user labels, annotations and connector-authored
 * notifications; then the source and target definitions compared — target-only setup fields with
 * JSON Schema defaults filled, a missing required configure field names the setup step, a missing
 * required preconnect field or a newly required OAuth scope asks for re-authentication, a changed
 * OAuth client, token endpoint or refresh input asks for a refresh attempt.
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { ErrorDetail } from "@svc/domain/Errors"
import type { HookNotification, HookResult } from "@svc/domain/HookResult"
import { annotationsMaxBytes, annotationsSize, keyProblem, labelValueProblem } from "@svc/domain/Labels"
import { configurationKeys } from "@svc/domain/SetupFlow"
import { prototypeKeys } from "@svc/domain/StrictInput"
import { checkMigratedConfiguration } from "../resources/SetupConfiguration.ts"

/** What hooks change, accumulated over the hooks of one migration. */
export interface HookState {
  readonly cfg: Record<string, unknown>
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  /** Connector-authored notifications by key: the last `set` entry, or `"unset"`. */
  readonly notifications: ReadonlyMap<string, HookNotification | "unset">
}

/** The starting state of a connection's hooks. */
export const initialHookState = (
  cfg: Readonly<Record<string, unknown>>,
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>
): HookState => ({
  cfg: { ...cfg },
  labels: { ...labels },
  annotations: { ...annotations },
  notifications: new Map()
})

const applySection = <V>(
  current: Readonly<Record<string, V>>,
  section: { readonly set?: Readonly<Record<string, V>>; readonly unset?: ReadonlyArray<string> } | undefined
): Record<string, V> => {
  if (section === undefined) return { ...current }
  const next: Record<string, V> = { ...current }
  for (const key of section.unset ?? []) delete next[key]
  for (const [key, value] of Object.entries(section.set ?? {})) {
    // Refused when the hook's output decoded (HookResult.ts); never assigned through the prototype.
    if (prototypeKeys.has(key)) continue
    next[key] = value
  }
  return next
}

/** spec 2.10: one hook's result applied over the state the previous hooks left. */
export const applyHookResult = (state: HookState, result: HookResult): HookState => {
  const notifications = new Map(state.notifications)
  for (const { key } of result.notifications?.unset ?? []) notifications.set(key, "unset")
  for (const entry of result.notifications?.set ?? []) notifications.set(entry.key, entry)
  return {
    cfg: applySection(state.cfg, result.config),
    labels: applySection(state.labels, result.labels),
    annotations: applySection(state.annotations, result.annotations),
    notifications
  }
}

/** The connection as rule 4 sees it. */
export interface MigratingConnection {
  readonly state: "setup" | "configured" | "disabled" | "disconnecting" | "disconnected"
  readonly setupStepId: string | null
  /** OAuth2: the scopes the provider granted, when known. */
  readonly grantedScopes?: ReadonlyArray<string> | null | undefined
}

/** What the migration writes and does after the hooks (spec 4.3 rules 4–5). */
export interface MigrationDecision {
  readonly configuration: Record<string, unknown>
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  readonly setupStepId: string | null
  /** Raise (true) or resolve (false) the built-in setup notice. */
  readonly setupNotice: boolean
  /** The connection needs re-authentication: unhealthy, with the built-in re-authentication notice. */
  readonly reauth: boolean
  /** Why it needs re-authentication (for the notice's metadata); empty when it does not. */
  readonly reauthReasons: ReadonlyArray<string>
  /** A changed OAuth client, token endpoint or refresh input: attempt a refresh after the switch. */
  readonly refresh: boolean
}

/** The result of comparing: a decision, or the problems that fail the migration (nothing persisted). */
export type Comparison =
  | { readonly _tag: "Decided"; readonly decision: MigrationDecision }
  | { readonly _tag: "Invalid"; readonly details: ReadonlyArray<ErrorDetail> }

/** The names of the definition's required OAuth2 scopes (none for other auth methods). */
export const requiredScopes = (definition: ConnectorDefinition): ReadonlyArray<string> =>
  definition.auth.type === "oauth2" ? definition.auth.scopes.filter((s) => s.required).map((s) => s.name) : []

const allScopes = (definition: ConnectorDefinition): ReadonlyArray<string> =>
  definition.auth.type === "oauth2" ? definition.auth.scopes.map((s) => s.name) : []

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/**
 * spec 4.3 rule 4: whether the target's OAuth client, token endpoint or refresh inputs differ from
 * the source's (only when both use OAuth2 with the same grant: a refresh needs the same method).
 */
export const refreshInputsChanged = (source: ConnectorDefinition, target: ConnectorDefinition): boolean => {
  const a = source.auth
  const b = target.auth
  if (a.type !== "oauth2" || b.type !== "oauth2" || a.grant_type !== b.grant_type) return false
  const common =
    a.token_endpoint !== b.token_endpoint ||
    a.client_auth !== b.client_auth ||
    !sameJson(a.token_params, b.token_params) ||
    a.scope_separator !== b.scope_separator ||
    !sameJson(allScopes(source), allScopes(target))
  if (a.grant_type === "authorization_code" && b.grant_type === "authorization_code") {
    return common || a.client_id !== b.client_id || !sameJson(a.refresh, b.refresh)
  }
  return common
}

const userMapProblems = (
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>
): Array<ErrorDetail> => {
  const details: Array<ErrorDetail> = []
  for (const [key, value] of Object.entries(labels)) {
    const problem = keyProblem(key) ?? labelValueProblem(value)
    if (problem !== undefined) details.push({ field: `labels.${key}`, message: problem })
  }
  for (const key of Object.keys(annotations)) {
    const problem = keyProblem(key)
    if (problem !== undefined) details.push({ field: `annotations.${key}`, message: problem })
  }
  if (annotationsSize(annotations) > annotationsMaxBytes) {
    details.push({ field: "annotations", message: `annotations are limited to ${annotationsMaxBytes} bytes` })
  }
  return details
}

/** spec 4.3 rule 4: compares source and target after the hooks and decides what the migration writes. */
export const decide = (
  source: ConnectorDefinition,
  target: ConnectorDefinition,
  connection: MigratingConnection,
  state: HookState
): Comparison => {
  const sourceKeys = configurationKeys(source.setup_flow)
  const checked = checkMigratedConfiguration(target, state.cfg, (key) => !sourceKeys.has(key))
  const details = [...checked.details, ...userMapProblems(state.labels, state.annotations)]
  if (details.length > 0) return { _tag: "Invalid", details }

  const reasons: Array<string> = []
  // A required scope the target asks for that the connection has not been granted (or, when the
  // provider did not say, that the source did not already require).
  const granted = new Set(connection.grantedScopes ?? requiredScopes(source))
  const newScopes = source.auth.type === "oauth2" ? requiredScopes(target).filter((name) => !granted.has(name)) : []
  if (newScopes.length > 0) reasons.push("required_scope_added")

  const live = connection.state === "configured" || connection.state === "disabled"
  let setupStepId = connection.setupStepId
  if (checked.preconnectStepId !== null) {
    // spec 3.1: a configured connection needs re-authentication; one still in setup resumes there.
    if (live) reasons.push("required_preconnect_field_added")
    else setupStepId = checked.preconnectStepId
  }
  if (connection.state === "setup") setupStepId = setupStepId ?? checked.setupStepId
  else if (checked.preconnectStepId === null || live) setupStepId = checked.setupStepId
  const missingSetup = checked.setupStepId !== null || (!live && checked.preconnectStepId !== null)

  const reauth = reasons.length > 0
  return {
    _tag: "Decided",
    decision: {
      configuration: checked.configuration,
      labels: state.labels,
      annotations: state.annotations,
      setupStepId,
      setupNotice: missingSetup,
      reauth,
      reauthReasons: reasons,
      // A refresh cannot grant what re-authentication must: only when none is needed.
      refresh: !reauth && refreshInputsChanged(source, target)
    }
  }
}
