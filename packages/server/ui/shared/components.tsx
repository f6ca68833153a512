/**
 * The few components both applications are built from (docs/ui.md "Shared design"): alerts,
 * badges, a confirmation dialog that names the impact, a connector's identity (logo, name,
 * description) and a details line for ids. Styles are the `svc-*` classes of theme.css, whose
 * colours, radius and fonts are the `--svc-*` tokens.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"

/** An error (announced with `role="alert"`) or a success/status message; nothing when `text` is undefined. */
export const Alert = (props: {
  readonly kind: "error" | "success"
  readonly text: string | undefined
  readonly testId?: string
  readonly children?: ComponentChildren
}) =>
  props.text === undefined ? null : (
    <div
      class={props.kind === "error" ? "svc-error" : "svc-success"}
      role={props.kind === "error" ? "alert" : "status"}
      data-testid={props.testId}
    >
      {props.text}
      {props.children}
    </div>
  )

/** Tones of a badge: good (green), warn (amber), bad (red), neutral. */
export type Tone = "good" | "warn" | "bad" | "neutral"

/** A short status word. */
export const Badge = (props: {
  readonly tone: Tone
  readonly children: ComponentChildren
  readonly testId?: string
  readonly value?: string
}) => (
  <span class={`svc-badge svc-badge-${props.tone}`} data-testid={props.testId} data-value={props.value}>
    {props.children}
  </span>
)

/** Ids and other technical names, folded away under "Details". */
export const Details = (props: { readonly children: ComponentChildren; readonly testId?: string }) => (
  <details class="svc-details" data-testid={props.testId}>
    <summary>Details</summary>
    <div class="svc-mono">{props.children}</div>
  </details>
)

/** A connector's logo, or its initial when it has none or the image does not load. */
export const Logo = (props: { readonly name: string; readonly url: string | undefined }) => {
  const [failed, setFailed] = useState(false)
  if (props.url !== undefined && !failed) {
    return <img class="svc-logo" src={props.url} alt="" width={32} height={32} onError={() => setFailed(true)} />
  }
  return (
    <span class="svc-logo svc-logo-initial" aria-hidden="true">
      {props.name.slice(0, 1).toUpperCase()}
    </span>
  )
}

/** What a connector looks like to people: its display name, else its name; logo; description. */
export interface ConnectorFace {
  readonly name: string
  readonly displayName?: string
  readonly description?: string
  readonly logoUrl?: string
}

/** The name people read for a connector. */
export const displayNameOf = (connector: ConnectorFace): string => connector.displayName ?? connector.name

/** Logo, display name and (unless `compact`) description of a connector. */
export const ConnectorIdentity = (props: {
  readonly connector: ConnectorFace
  readonly compact?: boolean
  readonly children?: ComponentChildren
}) => (
  <div class="svc-identity">
    <Logo name={displayNameOf(props.connector)} url={props.connector.logoUrl} />
    <div>
      <div class="svc-name">{displayNameOf(props.connector)}</div>
      {!props.compact && props.connector.description !== undefined && (
        <div class="svc-muted">{props.connector.description}</div>
      )}
      {props.children}
    </div>
  </div>
)

/** Props of {@link ConfirmDialog}. */
export interface ConfirmDialogProps {
  /** Shown while true. */
  readonly open: boolean
  readonly title: string
  /** What confirming does, in numbers where there are any ("disconnects 1,204 connections"). */
  readonly impact: ComponentChildren
  readonly confirmLabel: string
  readonly danger?: boolean
  /** A wider dialog (a diff). */
  readonly wide?: boolean
  readonly onConfirm: () => void
  readonly onClose: () => void
}

let dialogs = 0

/** A modal confirmation (focus trapped by the browser, Escape or Cancel closes it). */
export const ConfirmDialog = (props: ConfirmDialogProps) => {
  const dialog = useRef<HTMLDialogElement>(null)
  const [id] = useState(() => `svc-confirm-${++dialogs}`)
  useEffect(() => {
    const element = dialog.current
    if (element === null) return
    if (props.open && !element.open) element.showModal()
    if (!props.open && element.open) element.close()
  }, [props.open])
  return (
    <dialog
      ref={dialog}
      class={props.wide === true ? "svc-dialog-wide" : undefined}
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-text`}
      onClose={props.onClose}
    >
      <h2 id={`${id}-title`}>{props.title}</h2>
      <div id={`${id}-text`} data-testid="confirm-impact">
        {props.impact}
      </div>
      <div class="svc-row">
        <button
          type="button"
          class={`svc-button ${props.danger === false ? "svc-primary" : "svc-danger"}`}
          onClick={props.onConfirm}
        >
          {props.confirmLabel}
        </button>
        <button type="button" class="svc-button" onClick={() => dialog.current?.close()}>
          Cancel
        </button>
      </div>
    </dialog>
  )
}

/** A number as people write it (1,204). */
export const formatCount = (n: number): string => new Intl.NumberFormat("en-US").format(n)

/** "1 connection" / "1,204 connections". */
export const plural = (n: number, one: string, many = `${one}s`): string => `${formatCount(n)} ${n === 1 ? one : many}`
