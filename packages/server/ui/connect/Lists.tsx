/**
 * The Connect UI's lists: notices with their action, the user's connections (connector logo and
 * name, state and health in words, ids folded under "Details") and the connectors to connect.
 */
import type { Connection } from "@svc/domain/Connection"
import type { Connector } from "@svc/domain/Connector"
import type { Notification } from "@svc/domain/Notification"
import { Badge, ConnectorIdentity, Details, displayNameOf } from "../shared/components.tsx"

/** `/connections/{id}?action=reauth|configure` from a notice's `action_url`. */
export const parseAction = (
  url: string | null
): { connectionId: string; action: "reauth" | "configure" } | undefined => {
  if (url === null) return undefined
  const match = /^\/connections\/([A-Za-z0-9_-]+)\?action=(reauth|configure)$/.exec(url)
  return match === null ? undefined : { connectionId: match[1]!, action: match[2] as "reauth" | "configure" }
}

/** The connector of a connection as people see it (its id when the user cannot read the connector). */
export const faceOf = (connectors: ReadonlyArray<Connector>, connection: Connection) =>
  connectors.find((c) => c.id === connection.connectorId) ?? { name: connection.connectorId }

const stateWords: Readonly<Record<Connection["state"], string>> = {
  setup: "Setup not finished",
  configured: "Connected",
  disabled: "Disabled",
  disconnecting: "Disconnecting",
  disconnected: "Disconnected"
}

/** State and (for a connected one only: a setup has nothing to be healthy about yet) health. */
const StateBadges = (props: { readonly connection: Connection }) => {
  const { state, healthState } = props.connection
  return (
    <>
      <Badge tone={state === "configured" ? "good" : "warn"} testId="connection-state" value={state}>
        {stateWords[state]}
      </Badge>
      {state === "configured" && (
        <Badge tone={healthState === "healthy" ? "good" : "bad"} testId="connection-health" value={healthState}>
          {healthState === "healthy" ? "Working" : "Needs attention"}
        </Badge>
      )}
    </>
  )
}

export const NoticeList = (props: {
  readonly notices: ReadonlyArray<Notification>
  readonly busy: string | undefined
  readonly onAct: (notice: Notification) => void
}) => (
  <section class="svc-card" aria-labelledby="notices-heading">
    <h2 id="notices-heading">Notifications</h2>
    <ul class="svc-list" data-testid="notifications">
      {props.notices.map((notice) => {
        const action = parseAction(notice.action_url)
        return (
          <li key={notice.id} class={`svc-notice-${notice.level}`}>
            <div>
              <div class="svc-name">{notice.title}</div>
              <div class="svc-muted">{notice.message}</div>
            </div>
            <span class="svc-spacer" />
            {notice.can_action && action !== undefined && (
              <button
                type="button"
                class="svc-button svc-primary"
                disabled={props.busy === notice.id}
                onClick={() => props.onAct(notice)}
              >
                {action.action === "reauth" ? "Reconnect" : "Finish setup"}
              </button>
            )}
          </li>
        )
      })}
    </ul>
  </section>
)

export const ConnectionList = (props: {
  readonly connections: ReadonlyArray<Connection>
  readonly connectors: ReadonlyArray<Connector>
  readonly busy: string | undefined
  readonly onResume: (connection: Connection) => void
  readonly onDisconnect: (connection: Connection) => void
}) => (
  <section class="svc-card" aria-labelledby="connections-heading">
    <h2 id="connections-heading">Your connections</h2>
    {props.connections.length === 0 ? (
      <p class="svc-muted">No connections yet.</p>
    ) : (
      <ul class="svc-list" data-testid="connections">
        {props.connections.map((connection) => {
          const face = faceOf(props.connectors, connection)
          return (
            <li key={connection.id} data-connection-id={connection.id}>
              <ConnectorIdentity connector={face} compact>
                <Details>
                  {connection.id} · {connection.name} · {connection.connectorId}
                </Details>
              </ConnectorIdentity>
              <StateBadges connection={connection} />
              <span class="svc-spacer" />
              {connection.state === "setup" && (
                <button type="button" class="svc-button" onClick={() => props.onResume(connection)}>
                  Resume setup
                </button>
              )}
              <button
                type="button"
                class="svc-button svc-danger"
                disabled={props.busy === connection.id || connection.state === "disconnecting"}
                aria-label={`${connection.state === "setup" ? "Remove" : "Disconnect"} ${displayNameOf(face)}`}
                onClick={() => props.onDisconnect(connection)}
              >
                {props.busy === connection.id
                  ? "Disconnecting…"
                  : connection.state === "setup"
                    ? "Remove"
                    : "Disconnect"}
              </button>
            </li>
          )
        })}
      </ul>
    )}
  </section>
)

export const ConnectorList = (props: {
  readonly connectors: ReadonlyArray<Connector>
  readonly disabled: (connector: Connector) => boolean
  readonly onConnect: (connector: Connector) => void
}) => (
  <section class="svc-card" aria-labelledby="connectors-heading">
    <h2 id="connectors-heading">Connect an account</h2>
    {props.connectors.length === 0 ? (
      <p class="svc-muted">There is nothing you can connect yet.</p>
    ) : (
      <ul class="svc-list" data-testid="connectors">
        {props.connectors.map((connector) => (
          <li key={connector.id} data-connector-id={connector.id}>
            <ConnectorIdentity connector={connector}>
              <Details>
                {connector.id} · {connector.name}
              </Details>
            </ConnectorIdentity>
            <span class="svc-spacer" />
            <button
              type="button"
              class="svc-button svc-primary"
              disabled={props.disabled(connector)}
              aria-label={`Connect ${displayNameOf(connector)}`}
              onClick={() => props.onConnect(connector)}
            >
              Connect
            </button>
          </li>
        ))}
      </ul>
    )}
  </section>
)
