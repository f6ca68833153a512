import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { resolveTelemetry } from "../config/TelemetryConfig.ts"
import { Meter } from "../telemetry/Metrics.ts"
import { makeTelemetry, Telemetry } from "../telemetry/Telemetry.ts"
import { countRevocation, countTokenExchange, recordRefresh, withOAuth2Labels } from "./OAuth2Telemetry.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

const series = (store: Meter, name: string) => store.series(name).map((s) => ({ ...s.attributes, value: s.value }))

describe("OAuth2 counters", () => {
  it("count attempts by result and failures by the spec's reason", async () => {
    const store = new Meter()
    const telemetry = makeTelemetry(
      resolveTelemetry({ prometheus: { enabled: true } }, {}, []),
      undefined,
      store,
      () => undefined
    )
    const failed = (reason: TokenRequestFailed["reason"]) =>
      Effect.fail(new TokenRequestFailed({ reason, detail: "x" }))
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* recordRefresh("success")
        yield* recordRefresh("failure", "invalid_grant")
        yield* countTokenExchange(Effect.void)
        yield* Effect.ignore(countTokenExchange(failed("provider_5xx")))
        yield* Effect.ignore(countTokenExchange(failed("timeout")))
        yield* Effect.exit(countTokenExchange(Effect.die("boom")))
        yield* countRevocation("access_token")(Effect.void)
        yield* Effect.ignore(countRevocation("refresh_token")(failed("network_error")))
      }).pipe(Effect.provideService(Telemetry, telemetry))
    )
    expect(series(store, "svc.oauth2.refresh.attempts.total")).toEqual([
      { result: "success", value: 1 },
      { result: "failure", value: 1 }
    ])
    expect(series(store, "svc.oauth2.refresh.failures.total")).toEqual([{ reason: "invalid_grant", value: 1 }])
    expect(series(store, "svc.oauth2.token_exchange.attempts.total")).toEqual([
      { result: "success", value: 1 },
      { result: "failure", value: 3 }
    ])
    expect(series(store, "svc.oauth2.token_exchange.failures.total")).toEqual([
      { reason: "provider_5xx", value: 1 },
      { reason: "network_error", value: 1 },
      { reason: "internal_error", value: 1 }
    ])
    expect(series(store, "svc.oauth2.revocations.total")).toEqual([
      { revocation_kind: "access_token", result: "success", value: 1 },
      { revocation_kind: "refresh_token", result: "failure", value: 1 }
    ])
  })

  it("carry the connector's then the connection's labels through proxy.metricDimensionLabels, capped", async () => {
    const store = new Meter()
    const settings = resolveTelemetry(
      { prometheus: { enabled: true }, proxy: { metricDimensionLabels: ["team", "tier"], metricDimensionValueCap: 1 } },
      {},
      []
    )
    const telemetry = makeTelemetry(settings, undefined, store, () => undefined)
    const connector = { team: "connector-team", tier: "gold", secret: "not-projected" }
    const ofConnection = (team: string) => withOAuth2Labels(Effect.succeed(connector), { team, owner: "x" })
    const failed = (reason: TokenRequestFailed["reason"]) =>
      Effect.fail(new TokenRequestFailed({ reason, detail: "x" }))
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* recordRefresh("success").pipe(ofConnection("red"))
        // A second team value is past the cap of 1: `other`.
        yield* recordRefresh("failure", "invalid_grant").pipe(ofConnection("blue"))
        yield* recordRefresh("failure", "no_refresh_token").pipe(ofConnection("red"))
        yield* Effect.ignore(countTokenExchange(failed("provider_5xx")).pipe(ofConnection("red")))
        yield* countTokenExchange(Effect.void).pipe(ofConnection("red"))
        yield* countRevocation("access_token")(Effect.void).pipe(ofConnection("red"))
        // The connector's labels cannot be read: counted with the connection's alone.
        yield* countRevocation("refresh_token")(Effect.void).pipe(
          withOAuth2Labels(Effect.die("database down"), { team: "red" })
        )
        // Outside a connection's call: no label attribute.
        yield* Effect.ignore(countRevocation("access_token")(failed("network_error")))
      }).pipe(Effect.provideService(Telemetry, telemetry))
    )
    const red = { "svc.label.team": "red", "svc.label.tier": "gold" }
    expect(series(store, "svc.oauth2.refresh.attempts.total")).toEqual([
      { result: "success", ...red, value: 1 },
      { result: "failure", "svc.label.team": "other", "svc.label.tier": "gold", value: 1 },
      { result: "failure", ...red, value: 1 }
    ])
    expect(series(store, "svc.oauth2.refresh.failures.total")).toEqual([
      { reason: "invalid_grant", "svc.label.team": "other", "svc.label.tier": "gold", value: 1 },
      { reason: "no_refresh_token", ...red, value: 1 }
    ])
    expect(series(store, "svc.oauth2.token_exchange.attempts.total")).toEqual([
      { result: "failure", ...red, value: 1 },
      { result: "success", ...red, value: 1 }
    ])
    expect(series(store, "svc.oauth2.token_exchange.failures.total")).toEqual([
      { reason: "provider_5xx", ...red, value: 1 }
    ])
    expect(series(store, "svc.oauth2.revocations.total")).toEqual([
      { revocation_kind: "access_token", result: "success", ...red, value: 1 },
      { revocation_kind: "refresh_token", result: "success", "svc.label.team": "red", value: 1 },
      { revocation_kind: "access_token", result: "failure", value: 1 }
    ])
  })

  it("count nothing with telemetry off, and do not read the connector's labels", async () => {
    let reads = 0
    const connector = Effect.sync(() => {
      reads++
      return { team: "connector-team" }
    })
    await Effect.runPromise(recordRefresh("success").pipe(withOAuth2Labels(connector, { team: "red" })))
    await Effect.runPromise(countTokenExchange(Effect.void).pipe(withOAuth2Labels(connector, { team: "red" })))
    expect(reads).toBe(0)
  })
})
