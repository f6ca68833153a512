/**
 * A connection's setup in the Connect UI, step by step (forms from each step's JSON Schema, the
 * OAuth2 sign-in in a popup, the verify step), and the page the OAuth2 popup lands on.
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress } from "@svc/domain/ConnectionSetup"
import type { JSX } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, type ErrorDetail } from "../shared/api.ts"
import { type ObjectSchema, SchemaForm } from "../shared/SchemaForm.tsx"
import { api, friendlyErrors, isOAuthReturn, messageOf, type OAuthReturnMessage, verifyStepId } from "./common.ts"

/** Where the OAuth2 popup lands: hands the outcome to the opener and closes, or links back. */
export const OAuthReturn = () => {
  const params = new URLSearchParams(location.search)
  const message: OAuthReturnMessage = {
    type: "svc:oauth-return",
    connectionId: params.get("connection_id"),
    status: params.get("status"),
    error: params.get("error")
  }
  const opener = window.opener as Window | null
  useEffect(() => {
    if (opener !== null) {
      opener.postMessage(message, location.origin)
      window.close()
    }
  }, [])
  return (
    <main>
      <div class="svc-card">
        <h1>{message.error === null ? "Signed in" : "Sign-in did not complete"}</h1>
        <p>
          {message.error === null
            ? "You can close this window."
            : (friendlyErrors[message.error] ?? `The provider answered: ${message.error}.`)}
        </p>
        <a href="/connect/">Back to your connections</a>
      </div>
    </main>
  )
}

export interface SetupFlowProps {
  readonly title: string
  readonly initial: SetupProgress
  readonly onDone: (connection: Connection) => void
  readonly onCancel: () => void
}

/** One connection's setup, step by step, until `complete`. */
export const SetupFlow = (props: SetupFlowProps) => {
  const [progress, setProgress] = useState<SetupProgress>(props.initial)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const [details, setDetails] = useState<ReadonlyArray<ErrorDetail>>([])
  const [waitingForPopup, setWaitingForPopup] = useState(false)
  const heading = useRef<HTMLHeadingElement>(null)
  const connectionId = progress.connection.id

  useEffect(() => {
    if (progress.next.type === "complete") props.onDone(progress.connection)
    heading.current?.focus()
  }, [progress])

  const reload = async () => {
    setProgress(await api.get<SetupProgress>(`/api/v1/connections/${connectionId}/_setup`))
  }

  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (event.origin !== location.origin || !isOAuthReturn(event.data)) return
      if (event.data.connectionId !== connectionId) return
      setWaitingForPopup(false)
      if (event.data.error !== null) {
        setError(friendlyErrors[event.data.error] ?? `The provider answered: ${event.data.error}.`)
      } else {
        setError(undefined)
      }
      reload().catch((e: unknown) => setError(messageOf(e)))
    }
    window.addEventListener("message", onMessage)
    return () => window.removeEventListener("message", onMessage)
  }, [connectionId])

  const submit = async (stepId: string, values: Record<string, unknown>) => {
    setBusy(true)
    setError(undefined)
    setDetails([])
    try {
      setProgress(
        await api.send<SetupProgress>("POST", `/api/v1/connections/${connectionId}/_setup`, { stepId, values })
      )
    } catch (e) {
      setError(messageOf(e))
      if (e instanceof ApiError) setDetails(e.details)
      // The step moved on server-side (a failed verify stays at svc:verify): show where it stands.
      if (e instanceof ApiError && (e.code === "verification_failed" || e.code === "setup_step_mismatch")) {
        await reload().catch(() => undefined)
      }
    } finally {
      setBusy(false)
    }
  }

  const openSignIn = (url: string) => {
    setError(undefined)
    const popup = window.open(url, "svc-oauth", "popup,width=520,height=720")
    if (popup === null) {
      setError("The sign-in window was blocked. Allow pop-ups for this page, or use the link below.")
      return
    }
    setWaitingForPopup(true)
  }

  const next = progress.next
  let body: JSX.Element
  if (next.type === "redirect") {
    body = (
      <div>
        <p>Sign in with the provider in a new window to grant access.</p>
        <div class="svc-row">
          <button type="button" class="svc-button svc-primary" onClick={() => openSignIn(next.url)}>
            Continue to sign in
          </button>
          <a href={next.url} target="_blank" rel="noopener">
            Open the sign-in page in a new tab
          </a>
        </div>
        {waitingForPopup && (
          <p class="svc-muted" role="status">
            Waiting for the sign-in window…
          </p>
        )}
      </div>
    )
  } else if (next.type === "form" && next.stepId === verifyStepId) {
    body = (
      <div>
        <p>Check that the connection works.</p>
        <button type="button" class="svc-button svc-primary" disabled={busy} onClick={() => submit(verifyStepId, {})}>
          {busy ? "Checking…" : "Check connection"}
        </button>
      </div>
    )
  } else if (next.type === "form") {
    body = (
      <div>
        {next.title !== undefined && <h3>{next.title}</h3>}
        {next.description !== undefined && <p class="svc-muted">{next.description}</p>}
        <SchemaForm
          key={next.stepId}
          idPrefix={`step-${next.stepId.replace(/[^A-Za-z0-9_-]/g, "-")}`}
          schema={next.json_schema as ObjectSchema}
          submitLabel={next.phase === "credentials" ? "Connect" : "Continue"}
          busy={busy}
          serverDetails={details}
          onSubmit={(values) => submit(next.stepId, values)}
        />
      </div>
    )
  } else {
    body = <p role="status">Connected.</p>
  }

  return (
    <section class="svc-card" aria-labelledby="setup-heading">
      <div class="svc-row">
        <h2 id="setup-heading" tabIndex={-1} ref={heading}>
          {props.title}
        </h2>
        <span class="svc-spacer" />
        <button type="button" class="svc-button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      {error !== undefined && (
        <div class="svc-error" role="alert" data-testid="setup-error">
          {error}
          {/* A form shows its field problems beside the fields; other steps list them here (the failed probes). */}
          {next.type !== "form" || next.stepId === verifyStepId ? (
            <ul>
              {details.map((d) => (
                <li key={d.field}>
                  {d.field}: {d.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      )}
      {body}
    </section>
  )
}
