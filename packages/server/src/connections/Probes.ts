/**
 * Connector probes (spec 4.2, API-CONVENTIONS "Proxy"): a probe is one request the connector
 * defines, sent through a connection's credentials under the connector's outbound policy. Any
 * upstream answer or failure is an outcome, never an HTTP error of the caller's request.
 *
 * A probe goes through the same chain as a proxied request (spec 2.8 `request_types: probe`,
 * 4.6): rate-limit rules and the connection's cool-down first (a rejection is a failed outcome and
 * the upstream is not called), the reactive limiter sees the upstream's answer, and each probe
 * that left (or was answered by svc) writes one request event of type `probe`.
 */
import type { ProbeResult } from "@svc/domain/Connection"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { fillPlaceholders, placeholderKeys, probeStatusOk } from "@svc/domain/ConnectorProbe"
import { parseDuration } from "@svc/domain/Duration"
import { NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ConnectionId } from "@svc/domain/Ids"
import { resourceLabelSnapshot, type SnapshotActor } from "@svc/domain/Proxy"
import {
  eventHost,
  eventPath,
  noRateLimit,
  type RequestEventRateLimit,
  type ResponseSource
} from "@svc/domain/RequestEvent"
import { makeId } from "@svc/domain/Ids"
import type { ProbeRun as StoredProbeRun } from "@svc/sql/ProbeStateRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Context, DateTime, Effect, Layer } from "effect"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import { connectorCoolDownPolicy, rejectionMessage, RequestLimiter } from "../ratelimit/RequestLimiter.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { injectCredentials } from "../outbound/CredentialInjection.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "../resources/ResourceOps.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { TokenRefresher } from "./TokenRefresher.ts"

/** One probe of a definition. */
export type ProbeDefinition = NonNullable<ConnectorDefinition["probes"]>[number]

/** The stored run of periodic `probe` on `connectionId`: its result, and when it is due again. */
export const periodicRun = (connectionId: string, probe: ProbeDefinition, result: ProbeResult): StoredProbeRun => {
  const checkedAt = Date.parse(result.checkedAt)
  return {
    connectionId,
    probeId: probe.id,
    outcome: result.outcome,
    statusCode: result.statusCode,
    error: result.error,
    checkedAt: new Date(checkedAt),
    nextRunAt: new Date(checkedAt + (parseDuration(probe.period ?? "") ?? 60_000)),
    failureThreshold: probe.failure_threshold,
    recoveryThreshold: probe.recovery_threshold
  }
}

/** A configuration value as placeholder text, or undefined when it is not a scalar. */
const scalar = (value: unknown): string | undefined =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? String(value) : undefined

/**
 * The probe's URL and headers with `{{cfg.<key>}}` filled from the configuration (URL-encoded in
 * the URL, as is in headers), or the first problem.
 */
export const renderProbe = (
  probe: ProbeDefinition,
  configuration: Readonly<Record<string, unknown>>
): { readonly url: URL; readonly headers: Record<string, string> } | { readonly error: string } => {
  const missing = [probe.url, ...Object.values(probe.headers ?? {})]
    .flatMap(placeholderKeys)
    .find((key) => scalar(configuration[key]) === undefined)
  if (missing !== undefined) return { error: `configuration key ${missing} is not set` }
  const text = (key: string) => scalar(configuration[key]) ?? ""
  const headers = Object.fromEntries(
    Object.entries(probe.headers ?? {}).map(([name, value]) => [name, fillPlaceholders(value, text)])
  )
  if (Object.values(headers).some((value) => /[\r\n\0]/.test(value))) {
    return { error: "a probe header holds a line break after filling in the configuration" }
  }
  try {
    return { url: new URL(fillPlaceholders(probe.url, (key) => encodeURIComponent(text(key)))), headers }
  } catch {
    return { error: "the probe URL is not a valid URL after filling in the configuration" }
  }
}

/**
 * One probe run: its result, and whether svc's own limiter held it back (a rate-limit rule or the
 * connection's cool-down) — then the upstream was not asked and the result says nothing of health.
 */
export interface ProbeRun {
  readonly result: ProbeResult
  readonly limited: boolean
}

/** Probe runs. */
export class Probes extends Context.Service<
  Probes,
  {
    /** `GET /api/v1/connectors/{connector}/probes/{probe}?connectionId=`. */
    readonly runFor: (
      actor: AuthenticatedActor,
      connectorId: string,
      probeId: string,
      connectionId: ConnectionId
    ) => Effect.Effect<ProbeResult, ResourceError>
    /**
     * Runs one probe of a loaded connection (the background monitor's entry point); `actor` is
     * who asked for it, none for system traffic (the monitor, setup verification).
     */
    readonly run: (
      row: ConnectionRow,
      definition: ConnectorDefinition,
      probe: ProbeDefinition,
      actor?: SnapshotActor
    ) => Effect.Effect<ProbeRun>
  }
>()("@svc/server/Probes") {
  static readonly layerNoDeps: Layer.Layer<
    Probes,
    never,
    | ResourceOps
    | ConnectorDefinitions
    | ConnectionSecrets
    | TokenRefresher
    | Outbound
    | SvcConfig
    | RequestLimiter
    | RequestEventSink
  > = Layer.effect(
    Probes,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const refresher = yield* TokenRefresher
      const outbound = yield* Outbound
      const config = yield* SvcConfig
      const limiter = yield* RequestLimiter
      const sink = yield* RequestEventSink

      const run = Effect.fn("Probes.run")(function* (
        row: ConnectionRow,
        definition: ConnectorDefinition,
        probe: ProbeDefinition,
        actor?: SnapshotActor
      ) {
        const started = yield* Clock.currentTimeMillis
        const finish = (
          fields: { outcome: "success" | "failure"; statusCode?: number; error?: string },
          limited = false
        ) =>
          Effect.map(
            Clock.currentTimeMillis,
            (end): ProbeRun => ({
              result: {
                probeId: probe.id,
                connectionId: row.id,
                ...fields,
                durationMs: end - started,
                checkedAt: DateTime.formatIso(DateTime.makeUnsafe(end))
              },
              limited
            })
          )
        const configuration = yield* secrets.configuration(row)
        const target = renderProbe(probe, configuration)
        if ("error" in target) return yield* finish({ outcome: "failure", error: target.error })

        // The request event (spec 2.12) of the probe, as sent before credentials were injected.
        const labels = resourceLabelSnapshot(row.labels, actor)
        const record = (
          source: ResponseSource,
          status: number | undefined,
          rateLimit: RequestEventRateLimit | undefined
        ) =>
          Effect.map(Clock.currentTimeMillis, (end) =>
            sink.record({
              id: makeId("req"),
              timestamp: new Date(started).toISOString(),
              namespace: row.namespace,
              type: "probe",
              method: probe.method,
              host: eventHost(target.url),
              path: eventPath(target.url),
              response_status_code: status ?? null,
              response_source: source,
              connector_id: row.connectorId,
              connector_version: row.connectorVersion,
              connection_id: row.id,
              actor_id: actor?.id ?? null,
              duration_ms: end - started,
              labels,
              ...(rateLimit ?? noRateLimit),
              full_request_recorded: false
            })
          )

        const limited = yield* limiter.check({
          namespace: row.namespace,
          labels,
          method: probe.method,
          path: target.url.pathname,
          requestType: "probe",
          connectionId: row.id,
          connectorId: row.connectorId,
          connectorVersion: row.connectorVersion
        })
        if (limited.rejection !== undefined) {
          yield* record(limited.rejection.source, 429, limited.rateLimit)
          return yield* finish({ outcome: "failure", error: rejectionMessage(limited.rejection) }, true)
        }

        // A token due for refresh is refreshed first; a failed refresh leaves the verdict to the upstream.
        const credentials = yield* refresher.usable(row, definition)
        const request = injectCredentials(definition.auth, credentials, {
          url: target.url,
          headers: target.headers
        })
        const timeoutMs = parseDuration(probe.timeout) ?? 10_000
        const sentAt = yield* Clock.currentTimeMillis
        const response = yield* outbound
          .send(
            { method: probe.method, url: request.url, headers: request.headers },
            upstreamOptions(definition, config.outbound.allowPrivateNetworks, timeoutMs)
          )
          .pipe(Effect.result)
        if (response._tag === "Failure") {
          // A probe the guard refused never left: no event, as for a proxied request.
          if (!refusedBeforeLeaving.has(response.failure.reason))
            yield* record("upstream", undefined, limited.rateLimit)
          return yield* finish({ outcome: "failure", error: response.failure.message })
        }
        const status = response.success.status
        yield* limiter.upstreamAnswered({
          connectionId: row.id,
          policy: connectorCoolDownPolicy(definition),
          startedAt: sentAt,
          status,
          headers: response.success.headers
        })
        yield* record("upstream", status, limited.rateLimit)
        return yield* probeStatusOk(probe, status)
          ? finish({ outcome: "success", statusCode: status })
          : finish({ outcome: "failure", statusCode: status, error: `unexpected status ${status}` })
      })

      const runFor = Effect.fn("Probes.runFor")(function* (
        actor: AuthenticatedActor,
        connectorId: string,
        probeId: string,
        connectionId: ConnectionId
      ) {
        const row = yield* ops.load(actor, Kinds.connections, connectionId, "proxy")
        if (row.connectorId !== connectorId) {
          return yield* new NotFound({
            error: `connection ${connectionId} does not belong to connector ${connectorId}`,
            code: "not_found"
          })
        }
        const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
        const probe = definition.probes?.find((candidate) => candidate.id === probeId)
        if (probe === undefined) {
          return yield* new NotFound({
            error: `connector ${connectorId} version ${row.connectorVersion} has no probe ${probeId}`,
            code: "probe_not_found"
          })
        }
        return (yield* run(row, definition, probe, actor)).result
      })

      return Probes.of({ run, runFor })
    })
  )
}
