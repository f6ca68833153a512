/**
 * The actor form's model, without any DOM: permissions typed one per line as
 * `<namespace> <resources> <verbs>` (`root.acme connections,notifications get,list`), parsed into
 * the API's permission objects with a message per bad line (ActorForm.test.ts).
 */

/** One permission as the API takes it. */
export interface PermissionInput {
  readonly namespace: string
  readonly resources: ReadonlyArray<string>
  readonly verbs: ReadonlyArray<string>
}

/** The permissions of the text, or the first problem with its line number. */
export const parsePermissions = (
  text: string
): { readonly permissions: ReadonlyArray<PermissionInput> } | { readonly problem: string } => {
  const permissions: Array<PermissionInput> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "" || line.startsWith("#")) continue
    const parts = line.split(/\s+/)
    if (parts.length !== 3) return { problem: `Line ${i + 1}: write <namespace> <resources> <verbs>.` }
    const [namespace, resources, verbs] = parts as [string, string, string]
    const split = (s: string) => s.split(",").filter((x) => x !== "")
    if (split(resources).length === 0 || split(verbs).length === 0) {
      return { problem: `Line ${i + 1}: name at least one resource and one verb.` }
    }
    permissions.push({ namespace, resources: split(resources), verbs: split(verbs) })
  }
  return { permissions }
}

/** Permissions as the form shows them, one per line. */
export const permissionsText = (permissions: ReadonlyArray<PermissionInput>): string =>
  permissions.map((p) => `${p.namespace} ${p.resources.join(",")} ${p.verbs.join(",")}`).join("\n")

/** Problems of the form by field (`externalId`, `namespace`, `permissions`); empty when it can be sent. */
export const checkActor = (form: {
  readonly externalId: string
  readonly namespace: string
  readonly permissions: string
}): Record<string, string> => {
  const problems: Record<string, string> = {}
  if (form.externalId.trim() === "") problems.externalId = "The external id is required (the token's sub)."
  if (form.namespace.trim() === "") problems.namespace = "A namespace is required."
  const parsed = parsePermissions(form.permissions)
  if ("problem" in parsed) problems.permissions = parsed.problem
  return problems
}
