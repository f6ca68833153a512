/**
 * Rate-limit rules: the list (namespace filter; mode, algorithm, label selector and labels of each
 * rule), the form that creates or edits one (RuleForm.tsx), and deletion after a confirmation.
 */
import type { RateLimit } from "@svc/domain/RateLimit"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { ConfirmDialog } from "../shared/components.tsx"
import { ErrorBox, Field, KeyValues, TableHead, useLoad } from "./common.tsx"
import { shapeOf, summary } from "./RateLimitForm.ts"
import { RuleForm } from "./RuleForm.tsx"
import { adminApi } from "./adminApi.ts"

/** The rate-limit screen. */
export const RateLimitsView = () => {
  const [namespace, setNamespace] = useState("")
  const [editing, setEditing] = useState<RateLimit | "new" | undefined>()
  const [deleting, setDeleting] = useState<RateLimit | undefined>()
  const [saved, setSaved] = useState<string | undefined>()
  const [error, setError] = useState<string | undefined>()
  const rules = useLoad(() => adminApi.listRateLimits({ namespace, limit: "100" }), [namespace])
  const remove = async (rule: RateLimit) => {
    setDeleting(undefined)
    setError(undefined)
    try {
      await adminApi.deleteRateLimit(rule.id)
      setSaved(`Deleted ${rule.name}.`)
      rules.reload()
    } catch (e) {
      setError(describeError(e))
    }
  }
  return (
    <section aria-label="Rate limits">
      <div class="svc-row">
        <h1>Rate limits</h1>
        <span class="svc-spacer" />
        <button type="button" class="svc-button svc-primary" onClick={() => setEditing("new")}>
          New rate limit
        </button>
      </div>
      {saved !== undefined && (
        <p class="svc-success" role="status">
          {saved}
        </p>
      )}
      <ErrorBox error={error} />
      {editing !== undefined && (
        <RuleForm
          key={editing === "new" ? "new" : editing.id}
          editing={editing === "new" ? undefined : editing}
          onCancel={() => setEditing(undefined)}
          onSaved={(rule) => {
            setEditing(undefined)
            setSaved(`Saved ${rule.name} (${rule.id}).`)
            rules.reload()
          }}
        />
      )}
      <div class="svc-card">
        <Field id="rl-filter" label="Namespace filter" value={namespace} onInput={setNamespace} placeholder="all" />
        <ErrorBox error={rules.error} />
        <div class="svc-table-scroll">
          <table data-testid="rate-limits">
            <TableHead columns={["Name", "Namespace", "Mode", "Algorithm", "Label selector", "Labels"]} />
            <tbody>
              {(rules.data?.items ?? []).map((rule) => (
                <tr key={rule.id} data-rate-limit-id={rule.id}>
                  <td>{rule.name}</td>
                  <td class="svc-mono">{rule.namespace}</td>
                  <td>{shapeOf(rule).mode}</td>
                  <td class="svc-mono">{summary(rule)}</td>
                  <td class="svc-mono" data-testid="label-selector">
                    {shapeOf(rule).selector?.label_selector ?? "any"}
                  </td>
                  <td>
                    <KeyValues values={rule.labels} />
                  </td>
                  <td>
                    <div class="svc-row">
                      <button
                        type="button"
                        class="svc-button"
                        aria-label={`Edit ${rule.name}`}
                        onClick={() => setEditing(rule)}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        class="svc-button svc-danger"
                        aria-label={`Delete ${rule.name}`}
                        onClick={() => setDeleting(rule)}
                      >
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Delete rate limit ${deleting?.name ?? ""}?`}
        impact={<p>Requests it limits are no longer counted or refused by it, on every svc process within seconds.</p>}
        confirmLabel="Delete"
        onConfirm={() => deleting !== undefined && remove(deleting)}
        onClose={() => setDeleting(undefined)}
      />
    </section>
  )
}
