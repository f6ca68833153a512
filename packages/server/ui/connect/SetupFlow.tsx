/**
 * A connection's setup in the Connect UI, step by step (forms from each step's JSON Schema, the
 * OAuth2 sign-in in a popup, the verify step; the last two in SetupSteps.tsx). A failed
 * verification offers to edit the steps answered (credentials first), as `_setup` lists them at
 * `svc:verify` — so also in a later browser session: the form comes back with its non-secret
 * values kept and its secret fields empty, and the check runs again.
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress } from "@svc/domain/ConnectionSetup"
import type { JSX } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, type ErrorDetail } from "../shared/api.ts"
import { Alert } from "../shared/components.tsx"
import { connectApi } from "./connectApi.ts"
import { type Answered, type FormStep, SignInStep, VerifyStep } from "./SetupSteps.tsx"
import { type ObjectSchema, SchemaForm } from "../shared/SchemaForm.tsx"
import { providerError, isOAuthReturn, messageOf, probeProblem, verifyStepId } from "./common.ts"

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
  const [editing, setEditing] = useState<Answered | undefined>()
  const heading = useRef<HTMLHeadingElement>(null)
  const connectionId = progress.connection.id

  useEffect(() => {
    if (progress.next.type === "complete") props.onDone(progress.connection)
    heading.current?.focus()
  }, [progress])

  const reload = async () => {
    setProgress(await connectApi.setupProgress(connectionId))
  }

  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (event.origin !== location.origin || !isOAuthReturn(event.data)) return
      if (event.data.connectionId !== connectionId) return
      setWaitingForPopup(false)
      setError(event.data.error === null ? undefined : providerError(event.data.error))
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
      setProgress(await connectApi.submitSetupStep(connectionId, stepId, values))
      setEditing(undefined)
    } catch (e) {
      setError(messageOf(e))
      if (e instanceof ApiError) setDetails(e.details)
      // The step moved on server-side (a failed verify stays at svc:verify): show where it stands.
      if (e instanceof ApiError && (e.code === "verification_failed" || e.code === "setup_step_mismatch")) {
        setEditing(undefined)
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

  const formOf = (form: FormStep, initialValues: Readonly<Record<string, unknown>> | undefined, label: string) => (
    <div>
      {form.title !== undefined && <h3>{form.title}</h3>}
      {form.description !== undefined && <p class="svc-muted">{form.description}</p>}
      <SchemaForm
        key={`${form.stepId}-${initialValues === undefined ? "new" : "edit"}`}
        idPrefix={`step-${form.stepId.replace(/[^A-Za-z0-9_-]/g, "-")}`}
        schema={form.json_schema as ObjectSchema}
        submitLabel={label}
        busy={busy}
        serverDetails={details}
        {...(initialValues === undefined ? {} : { initialValues })}
        onSubmit={(values) => submit(form.stepId, values)}
      />
    </div>
  )

  const next = progress.next
  const atVerify = next.type === "form" && next.stepId === verifyStepId
  let body: JSX.Element
  if (editing !== undefined) {
    body = (
      <div>
        <p>Correct what you entered; secret values must be entered again. The connection is checked again.</p>
        {formOf(editing, editing.values, "Save and check again")}
        <button type="button" class="svc-link-button" onClick={() => setEditing(undefined)}>
          Back
        </button>
      </div>
    )
  } else if (next.type === "redirect") {
    body = <SignInStep url={next.url} waiting={waitingForPopup} onOpen={() => openSignIn(next.url)} />
  } else if (atVerify) {
    body = (
      <VerifyStep
        answered={progress.answered ?? []}
        busy={busy}
        onEdit={(a) => {
          setError(undefined)
          setDetails([])
          setEditing(a)
        }}
        onCheck={() => submit(verifyStepId, {})}
      />
    )
  } else if (next.type === "form") {
    body = formOf(next, undefined, next.phase === "credentials" ? "Connect" : "Continue")
  } else {
    body = <p role="status">Connected.</p>
  }

  // A form shows its field problems beside the fields; the verify step lists the failed checks in words.
  const listed = editing === undefined && (next.type !== "form" || atVerify)
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
      <Alert kind="error" text={error} testId="setup-error">
        {listed && details.length > 0 && (
          <ul>
            {[...new Set(details.map((d) => probeProblem(d.message)))].map((text) => (
              <li key={text}>{text}</li>
            ))}
          </ul>
        )}
      </Alert>
      {body}
    </section>
  )
}
