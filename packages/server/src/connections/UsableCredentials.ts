/**
 * A connection's credentials ready for a request: decrypted, and a client-credentials token due
 * for renewal renewed and stored with compare-and-swap (a concurrent rotation wins; this caller
 * still uses the fresh token). Shared by probes and the proxy.
 */
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Effect } from "effect"
import type { ConnectionSecrets } from "./ConnectionSecrets.ts"
import type { Credentials, CredentialsError } from "./Credentials.ts"

/** The services `usableCredentials` works with. */
export interface UsableCredentialsDeps {
  readonly secrets: ConnectionSecrets["Service"]
  readonly credentials: Credentials["Service"]
  readonly connections: ConnectionRepo["Service"]
}

/** The credentials of `row` for requests now; fails only when a due renewal fails. */
export const usableCredentials =
  ({ secrets, credentials, connections }: UsableCredentialsDeps) =>
  (
    row: ConnectionRow,
    definition: ConnectorDefinition
  ): Effect.Effect<StoredCredentials | undefined, CredentialsError> =>
    Effect.gen(function* () {
      const stored = yield* secrets.credentials(row)
      const renewed = yield* credentials.renew(definition, stored)
      if (renewed === undefined) return stored
      const sealed = yield* secrets.sealCredentials(row, renewed)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* Effect.orDie(connections.swapCredentials(row.id, row.credentialsEnc, sealed, now))
      return renewed
    })
