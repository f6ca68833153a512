/** The Connect UI's disconnect confirmation dialog. */
import type { Connection } from "@svc/domain/Connection"
import { useEffect, useRef } from "preact/hooks"

export interface ConfirmProps {
  readonly connection: Connection | undefined
  readonly onConfirm: (connection: Connection) => void
  readonly onClose: () => void
}

/** The disconnect confirmation: a modal dialog (focus trapped, Escape cancels). */
export const ConfirmDisconnect = (props: ConfirmProps) => {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    if (element === null) return
    if (props.connection !== undefined && !element.open) element.showModal()
    if (props.connection === undefined && element.open) element.close()
  }, [props.connection])
  return (
    <dialog ref={dialog} aria-labelledby="confirm-title" aria-describedby="confirm-text" onClose={props.onClose}>
      <h2 id="confirm-title">Disconnect {props.connection?.name}?</h2>
      <p id="confirm-text">
        The application will no longer be able to use this account. Access granted at the provider is revoked.
      </p>
      <div class="svc-row">
        <button
          type="button"
          class="svc-button svc-danger"
          onClick={() => props.connection !== undefined && props.onConfirm(props.connection)}
        >
          Disconnect
        </button>
        <button type="button" class="svc-button" onClick={() => dialog.current?.close()}>
          Cancel
        </button>
      </div>
    </dialog>
  )
}
