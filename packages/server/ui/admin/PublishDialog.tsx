/** The version diff shown before publishing: the primary version's definition against the one to publish. */
import type { ConnectorVersion } from "@svc/domain/Connector"
import { ConfirmDialog } from "../shared/components.tsx"
import { canonicalText, diffLines } from "./diff.ts"

const marks = { same: " ", add: "+", remove: "-" } as const

export const PublishDialog = (props: {
  readonly target: ConnectorVersion | undefined
  readonly primary: ConnectorVersion | undefined
  readonly connections: number | undefined
  readonly onConfirm: (version: number) => void
  readonly onClose: () => void
}) => {
  const { target, primary } = props
  const lines =
    target === undefined
      ? []
      : diffLines(primary === undefined ? "" : canonicalText(primary.definition), canonicalText(target.definition))
  const changed = lines.filter((line) => line.kind !== "same").length
  return (
    <ConfirmDialog
      open={target !== undefined}
      wide
      title={`Publish version ${target?.version ?? ""}?`}
      danger={false}
      confirmLabel={`Publish version ${target?.version ?? ""}`}
      impact={
        <>
          <p>
            {primary === undefined
              ? "There is no primary version yet: new connections will use this one."
              : `New connections will use version ${target?.version}; version ${primary.version} becomes active. The ${props.connections ?? "…"} existing connection(s) stay on their versions until migrated. ${changed} line(s) differ.`}
          </p>
          <section
            class="svc-diff"
            data-testid="version-diff"
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable with the keyboard (axe: scrollable-region-focusable)
            tabIndex={0}
            aria-label={`Changes from ${primary === undefined ? "nothing" : `version ${primary.version}`}`}
          >
            {lines.map((line, index) => (
              <div key={index} class={`svc-diff-${line.kind}`}>
                {marks[line.kind]} {line.text}
              </div>
            ))}
          </section>
        </>
      }
      onConfirm={() => target !== undefined && props.onConfirm(target.version)}
      onClose={props.onClose}
    />
  )
}
