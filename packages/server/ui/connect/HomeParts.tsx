/** Pieces of the Connect UI's signed-in screen: its header and the disconnect confirmation. */
import type { Connection } from "@svc/domain/Connection"
import { ConfirmDialog } from "../shared/components.tsx"
import { type ConnectConfig, hostWindow, notifyHost } from "./host.ts"

/** The title and, when a host framed or opened the page, a Close button that tells it. */
export const HomeHeader = (props: { readonly config: ConnectConfig }) => (
  <div class="svc-row">
    <h1>Connected accounts</h1>
    <span class="svc-spacer" />
    {hostWindow() !== undefined && (
      <button
        type="button"
        class="svc-button"
        onClick={() => {
          notifyHost(props.config, { type: "svc:connect:close" })
          // A popup the host opened closes itself; an iframe is the host's to remove.
          if (window.parent === window && window.opener !== null) window.close()
        }}
      >
        Close
      </button>
    )}
  </div>
)

/** Confirms disconnecting a connection (or removing an unfinished setup), naming the impact. */
export const DisconnectDialog = (props: {
  readonly connection: Connection | undefined
  readonly name: string
  readonly onConfirm: () => void
  readonly onClose: () => void
}) => {
  const setup = props.connection?.state === "setup"
  return (
    <ConfirmDialog
      open={props.connection !== undefined}
      title={setup ? `Remove the unfinished ${props.name} setup?` : `Disconnect ${props.name}?`}
      impact={
        <p>
          {setup
            ? "The setup is discarded with what was entered so far."
            : "The application will no longer be able to use this account. Access granted at the provider is revoked."}
        </p>
      }
      confirmLabel={setup ? "Remove" : "Disconnect"}
      onConfirm={props.onConfirm}
      onClose={props.onClose}
    />
  )
}
