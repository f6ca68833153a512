import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as PgClient from "./PgClient.ts"

describe("PgClient", () => {
  it.effect(
    "an unreachable server fails the layer naming host, port, database and the driver's reason, never the password",
    () =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(
          Layer.build(PgClient.layer({ url: "postgres://svc:s3cr3t-pw@127.0.0.1:1/inventory" })).pipe(Effect.scoped)
        )
        assert.isTrue(Exit.isFailure(exit))
        const message = Exit.isFailure(exit)
          ? String(exit.cause.reasons.map((r) => (r._tag === "Fail" ? r.error.message : "")).join(""))
          : ""
        assert.include(message, 'cannot connect to PostgreSQL at 127.0.0.1:1, database "inventory": ')
        assert.include(message, "ECONNREFUSED")
        assert.notInclude(message, "s3cr3t-pw")
      })
  )

  it("names a certificate the TLS check refused as such", () => {
    const refused = Object.assign(new Error("self-signed certificate in certificate chain"), {
      code: "SELF_SIGNED_CERT_IN_CHAIN"
    })
    assert.strictEqual(
      PgClient.connectFailureMessage("postgres://svc:pw@db.internal:5433/app", new Error("", { cause: refused })),
      'cannot connect to PostgreSQL at db.internal:5433, database "app": TLS certificate rejected ' +
        "(SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain); the server's certificate must be " +
        "signed by the configured CA (database.ssl.ca, else Node's CA store) and name the host"
    )
  })

  it("masks the password wherever the driver's reason repeats it", () => {
    const message = PgClient.connectFailureMessage(
      "postgres://svc:hunter2@db.internal/app",
      new Error("outer", { cause: new Error("auth for hunter2 failed") })
    )
    assert.strictEqual(message, 'cannot connect to PostgreSQL at db.internal:5432, database "app": auth for *** failed')
    assert.strictEqual(
      PgClient.connectFailureMessage("not a url hunter2", new Error("boom")),
      "cannot connect to PostgreSQL at the configured URL: boom"
    )
  })
})
