import { Effect, Option } from "effect"
import { withOAuth2Labels } from "../oauth/OAuth2Telemetry.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import type { ResourceOps } from "../resources/ResourceOps.ts"
import type { CallSubject } from "./LimitedCalls.ts"

/**
 * The labels the OAuth2 counters of a connection's token calls project (spec 8.3): its connector's
 * labels, read only when a counter is recorded (metrics on), then the connection's own.
 */
export const oauth2LabelsOf = (ops: ResourceOps["Service"], subject: Pick<CallSubject, "connectorId" | "labels">) =>
  withOAuth2Labels(
    Effect.map(ops.find(Kinds.connectors, subject.connectorId), (found) => Option.getOrUndefined(found)?.labels),
    subject.labels
  )
