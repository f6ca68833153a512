/** Pieces of the Connect UI's setup flow: the sign-in step, the verify step and the answered forms. */
import type { AnsweredStep, SetupProgress } from "@svc/domain/ConnectionSetup"
import type { ObjectSchema } from "../shared/SchemaForm.tsx"

export type FormStep = Extract<SetupProgress["next"], { readonly type: "form" }>

/**
 * A form step answered earlier (in this browser or another, as `_setup` reports it at
 * `svc:verify`): the form and the stored values of its non-secret fields.
 */
export type Answered = AnsweredStep

const editLabel = (form: FormStep): string =>
  form.phase === "credentials"
    ? "Edit credentials"
    : `Edit ${(form.title ?? (form.json_schema as ObjectSchema).title ?? "settings").toLowerCase()}`

/** The OAuth2 step: open the provider's sign-in in a popup (or a tab). */
export const SignInStep = (props: { readonly url: string; readonly waiting: boolean; readonly onOpen: () => void }) => (
  <div>
    <p>Sign in with the provider in a new window to grant access.</p>
    <div class="svc-row">
      <button type="button" class="svc-button svc-primary" onClick={props.onOpen}>
        Continue to sign in
      </button>
      <a href={props.url} target="_blank" rel="noopener">
        Open the sign-in page in a new tab
      </a>
    </div>
    {props.waiting && (
      <p class="svc-muted" role="status">
        Waiting for the sign-in window…
      </p>
    )}
  </div>
)

/** The verify step: check again, or edit an answered step (credentials first). */
export const VerifyStep = (props: {
  readonly answered: ReadonlyArray<Answered>
  readonly busy: boolean
  readonly onEdit: (answered: Answered) => void
  readonly onCheck: () => void
}) => {
  // Credentials first: they are what a failed check most often means.
  const editable = [...props.answered].sort(
    (a, b) => Number(b.phase === "credentials") - Number(a.phase === "credentials")
  )
  return (
    <div>
      <p>Check that the connection works.</p>
      <div class="svc-row">
        {editable.map((a) => (
          <button
            key={a.stepId}
            type="button"
            class={`svc-button ${a.phase === "credentials" ? "svc-primary" : ""}`}
            disabled={props.busy}
            onClick={() => props.onEdit(a)}
          >
            {editLabel(a)}
          </button>
        ))}
        <button type="button" class="svc-button" disabled={props.busy} onClick={props.onCheck}>
          {props.busy ? "Checking…" : "Check again"}
        </button>
      </div>
    </div>
  )
}
