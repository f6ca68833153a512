import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import fc from "fast-check"
import type { Permission } from "./Auth.ts"
import {
  canSeeNamespace,
  hasAnyGrant,
  isAllowed,
  isNamespacePath,
  isNamespacePattern,
  matchesNamespace,
  NamespacePath,
  type PermissionActor,
  type PermissionRequest,
  type PermissionSubject,
  renderNamespacePattern,
  resourceScope
} from "./PermissionMatcher.ts"

const subject: PermissionSubject = {
  externalId: "alice",
  labels: { tenant: "acme", region: "EU", dotted: "acme.evil", star: "*", empty: "" },
  annotations: { team: "core", wild: "**" }
}

const perm = (namespace: string, extra: Partial<Permission> = {}): Permission => ({
  namespace,
  resources: ["connections"],
  verbs: ["get"],
  ...extra
})

const actor = (permissions: ReadonlyArray<Permission>): PermissionActor => ({ ...subject, permissions })

const get = (namespace: string, resourceId?: string): PermissionRequest =>
  resourceId === undefined
    ? { namespace, resource: "connections", verb: "get" }
    : { namespace, resource: "connections", verb: "get", resourceId }

describe("NamespacePath", () => {
  it.each([
    ["root", true],
    ["root.acme", true],
    ["root.acme.eu-1", true],
    ["root.a_b.c9", true],
    [`root.${"a".repeat(63)}`, true],
    [`root.${"a".repeat(64)}`, false],
    ["", false],
    ["acme", false],
    ["root.", false],
    ["root..acme", false],
    ["root.Acme", false],
    ["root.-acme", false],
    ["root.acme-", false],
    ["root.*", false],
    ["root.acme.**", false],
    [`root${".a".repeat(256)}`, false]
  ])("%s → %s", (value, expected) => {
    assert.strictEqual(isNamespacePath(value), expected)
    assert.strictEqual(Schema.is(NamespacePath)(value), expected)
  })
})

describe("matchesNamespace", () => {
  it.each([
    ["root.acme", "root.acme", true],
    ["root.acme", "root.acme.eu", false],
    ["root.acme", "root", false],
    ["root.acme.**", "root.acme", true],
    ["root.acme.**", "root.acme.eu.prod", true],
    ["root.acme.**", "root.acmecorp", false],
    ["root.ac.**", "root.acme", false],
    ["root.**", "root", true],
    ["root.**", "root.x.y", true],
    ["**", "root.anything.deep", true],
    ["*", "root", true],
    ["root.*", "root.acme", false],
    ["root.**.x", "root.a.x", false],
    ["root.acme.**", "not-a-path", false],
    ["**", "root..x", false],
    ["root.{{external_id}}", "root.alice", true],
    ["root.{{external_id}}.**", "root.alice.sub", true],
    ["root.{{external_id}}", "root.bob", false],
    ["root.{{labels.tenant}}.**", "root.acme.eu", true],
    ["root.{{ labels.tenant }}", "root.acme", true],
    ["root.team-{{annotations.team}}", "root.team-core", true],
    ["root.{{labels.missing}}", "root.acme", false],
    ["root.{{labels.missing}}.**", "root", false],
    ["root.{{annotations.missing}}", "root.acme", false],
    ["root.{{labels.region}}", "root.eu", false],
    ["root.{{labels.region}}", "root.EU", false],
    ["root.{{labels.dotted}}", "root.acme.evil", false],
    ["root.{{labels.dotted}}.**", "root.acme.evil", false],
    ["root.{{labels.star}}", "root.x", false],
    ["root.{{annotations.wild}}", "root.x", false],
    ["{{annotations.wild}}", "root", false],
    ["root.{{labels.empty}}", "root", false],
    ["root.{{labels.constructor}}", "root.function", false],
    ["root.{{labels.__proto__}}", "root", false],
    ["root.{{unknown}}", "root.x", false],
    ["root.{{labels.}}", "root.x", false]
  ])("%s vs %s → %s", (pattern, namespace, expected) => {
    assert.strictEqual(matchesNamespace(pattern, subject, namespace), expected)
  })

  it("renders templates and reports invalid ones", () => {
    assert.deepStrictEqual(renderNamespacePattern("root.{{labels.tenant}}.**", subject), {
      _tag: "Path",
      path: "root.acme",
      subtree: true
    })
    assert.deepStrictEqual(renderNamespacePattern("**", subject), { _tag: "Any" })
    assert.strictEqual(renderNamespacePattern("root.{{labels.missing}}", subject), undefined)
    assert.isTrue(isNamespacePattern("root.{{labels.svc/act/-/ns}}.**"))
    assert.isFalse(isNamespacePattern("root.{{labels.a}}-"))
    assert.isFalse(isNamespacePattern("root.{{foo}}"))
    assert.isFalse(isNamespacePattern("root.a*"))
  })
})

describe("isAllowed", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly permissions: ReadonlyArray<Permission>
    readonly restrictions?: ReadonlyArray<Permission>
    readonly request: PermissionRequest
    readonly expected: boolean
  }> = [
    { name: "exact grant", permissions: [perm("root.acme")], request: get("root.acme", "cxn_1"), expected: true },
    { name: "no permissions", permissions: [], request: get("root.acme"), expected: false },
    {
      name: "other resource",
      permissions: [perm("root.acme")],
      request: { namespace: "root.acme", resource: "connectors", verb: "get" },
      expected: false
    },
    {
      name: "other verb",
      permissions: [perm("root.acme")],
      request: { namespace: "root.acme", resource: "connections", verb: "update" },
      expected: false
    },
    {
      name: "wildcard resource and verb",
      permissions: [perm("root.**", { resources: ["*"], verbs: ["*"] })],
      request: { namespace: "root.x", resource: "rate_limits", verb: "delete", resourceId: "rl_1" },
      expected: true
    },
    {
      name: "listed resource id",
      permissions: [perm("root.acme", { resourceIds: ["cxn_1", "cxn_2"] })],
      request: get("root.acme", "cxn_2"),
      expected: true
    },
    {
      name: "unlisted resource id",
      permissions: [perm("root.acme", { resourceIds: ["cxn_1"] })],
      request: get("root.acme", "cxn_9"),
      expected: false
    },
    {
      name: "id-less request against id-limited grant",
      permissions: [perm("root.acme", { resourceIds: ["cxn_1"] })],
      request: get("root.acme"),
      expected: false
    },
    {
      name: "resourceIds star is literal",
      permissions: [perm("root.acme", { resourceIds: ["*"] })],
      request: get("root.acme", "cxn_1"),
      expected: false
    },
    {
      name: "restriction inside grant",
      permissions: [perm("root.**")],
      restrictions: [perm("root.acme.**")],
      request: get("root.acme.eu", "cxn_1"),
      expected: true
    },
    {
      name: "restriction outside request",
      permissions: [perm("root.**")],
      restrictions: [perm("root.other")],
      request: get("root.acme", "cxn_1"),
      expected: false
    },
    {
      name: "restriction cannot widen",
      permissions: [perm("root.acme")],
      restrictions: [perm("**", { resources: ["*"], verbs: ["*"] })],
      request: get("root.other", "cxn_1"),
      expected: false
    },
    {
      name: "empty restrictions allow nothing",
      permissions: [perm("root.**")],
      restrictions: [],
      request: get("root.acme", "cxn_1"),
      expected: false
    },
    {
      name: "restriction template rendered against backing actor",
      permissions: [perm("root.**")],
      restrictions: [perm("root.{{labels.tenant}}.**")],
      request: get("root.acme.eu", "cxn_1"),
      expected: true
    },
    {
      name: "restriction template with missing label",
      permissions: [perm("root.**")],
      restrictions: [perm("root.{{labels.nope}}.**")],
      request: get("root.acme", "cxn_1"),
      expected: false
    },
    {
      name: "restriction narrows resource ids",
      permissions: [perm("root.acme")],
      restrictions: [perm("root.acme", { resourceIds: ["cxn_1"] })],
      request: get("root.acme", "cxn_2"),
      expected: false
    }
  ]
  it.each(cases)("$name", ({ expected, permissions, request, restrictions }) => {
    assert.strictEqual(isAllowed({ actor: actor(permissions), restrictions, request }), expected)
  })
})

describe("hasAnyGrant", () => {
  it("needs a grant, and an overlapping restriction when restricted", () => {
    const granted = actor([perm("root.acme.**", { resourceIds: ["x"] }), perm("root.{{labels.missing}}")])
    assert.isTrue(hasAnyGrant(granted, "connections", "get"))
    assert.isFalse(hasAnyGrant(granted, "connections", "update"))
    assert.isFalse(hasAnyGrant(actor([perm("root.{{labels.missing}}")]), "connections", "get"))
    assert.isFalse(hasAnyGrant(actor([perm("root.acme", { resourceIds: [] })]), "connections", "get"))
    assert.isTrue(hasAnyGrant({ ...granted, restrictions: [perm("root.acme.eu")] }, "connections", "get"))
    assert.isFalse(hasAnyGrant({ ...granted, restrictions: [perm("root.other.**")] }, "connections", "get"))
    assert.isFalse(
      hasAnyGrant({ ...granted, restrictions: [perm("root.acme", { resourceIds: ["y"] })] }, "connections", "get")
    )
    assert.isFalse(hasAnyGrant({ ...granted, restrictions: [] }, "connections", "get"))
  })
})

describe("resourceScope", () => {
  it("intersects grants and restrictions", () => {
    const scope = resourceScope({
      actor: actor([perm("root.acme", { resourceIds: ["a", "b"] }), perm("root.**", { resourceIds: ["c"] })]),
      restrictions: [perm("root.acme", { resourceIds: ["b", "c", "d"] })],
      namespace: "root.acme",
      resource: "connections",
      verb: "get"
    })
    assert.deepStrictEqual(scope, { _tag: "Ids", ids: new Set(["b", "c"]) })
  })

  it("is All, None or Ids", () => {
    const input = { namespace: "root.acme", resource: "connections", verb: "get" }
    assert.deepStrictEqual(resourceScope({ ...input, actor: actor([perm("root.acme")]) }), { _tag: "All" })
    assert.deepStrictEqual(resourceScope({ ...input, actor: actor([perm("root.other")]) }), { _tag: "None" })
    assert.isTrue(canSeeNamespace({ ...input, actor: actor([perm("root.acme", { resourceIds: ["x"] })]) }))
    assert.isFalse(
      canSeeNamespace({
        ...input,
        actor: actor([perm("root.acme", { resourceIds: ["x"] })]),
        restrictions: [perm("root.acme", { resourceIds: ["y"] })]
      })
    )
  })
})

const segment = fc.stringMatching(/^[a-z0-9](?:[a-z0-9_-]{0,8}[a-z0-9])?$/)
const path = fc.array(segment, { maxLength: 4 }).map((segments) => ["root", ...segments].join("."))
const suffix = fc.stringMatching(/^[a-z0-9_-]{0,4}[a-z0-9]$/)

describe("properties", () => {
  it("x.** matches x and every descendant", () => {
    fc.assert(
      fc.property(path, fc.array(segment, { maxLength: 4 }), (base, tail) => {
        const namespace = [base, ...tail].join(".")
        return matchesNamespace(`${base}.**`, subject, namespace)
      })
    )
  })

  it("x.** never matches a sibling that shares a prefix, nor its descendants", () => {
    fc.assert(
      fc.property(path, segment, suffix, fc.array(segment, { maxLength: 3 }), (parent, last, extra, tail) => {
        const base = `${parent}.${last}`
        const sibling = [`${base}${extra}`, ...tail].join(".")
        return !matchesNamespace(`${base}.**`, subject, sibling) && !matchesNamespace(base, subject, sibling)
      })
    )
  })

  it("an exact path matches only itself", () => {
    fc.assert(fc.property(path, path, (a, b) => matchesNamespace(a, subject, b) === (a === b)))
  })

  it("a rendered value is confined to one segment whatever it contains", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), segment, fc.constantFrom("*", "**", "a.b", ".", "A", "x.**")),
        path,
        (value, other) => {
          const s: PermissionSubject = { externalId: value, labels: {}, annotations: {} }
          return [`root.${value}`, `root.${value}.child`, other].every((ns) => {
            const matched = matchesNamespace("root.{{external_id}}.**", s, ns)
            const inside = ns === `root.${value}` || ns.startsWith(`root.${value}.`)
            return matched === (/^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$/.test(value) && inside)
          })
        }
      )
    )
  })

  it("isNamespacePath never throws and agrees with the schema", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          path,
          path.map((p) => `${p}.`)
        ),
        (value) => {
          const valid = isNamespacePath(value)
          return valid === Schema.is(NamespacePath)(value) && (!valid || value.split(".")[0] === "root")
        }
      )
    )
  })

  const permissionArb: fc.Arbitrary<Permission> = fc.record(
    {
      namespace: fc.oneof(
        path,
        path.map((p) => `${p}.**`),
        fc.constant("**")
      ),
      resources: fc.array(fc.constantFrom("connections", "connectors", "*"), { minLength: 1, maxLength: 2 }),
      verbs: fc.array(fc.constantFrom("get", "list", "*"), { minLength: 1, maxLength: 2 }),
      resourceIds: fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 2 })
    },
    { requiredKeys: ["namespace", "resources", "verbs"] }
  )
  const requestArb: fc.Arbitrary<PermissionRequest> = fc.record(
    {
      namespace: path,
      resource: fc.constantFrom("connections", "connectors"),
      verb: fc.constantFrom("get", "list"),
      resourceId: fc.constantFrom("a", "b", "c")
    },
    { requiredKeys: ["namespace", "resource", "verb"] }
  )

  it("restrictions only narrow: allowed(A, R) = allowed(A) and allowed(R)", () => {
    fc.assert(
      fc.property(
        fc.array(permissionArb, { maxLength: 3 }),
        fc.array(permissionArb, { maxLength: 3 }),
        requestArb,
        (a, r, request) => {
          const both = isAllowed({ actor: actor(a), restrictions: r, request })
          return both === (isAllowed({ actor: actor(a), request }) && isAllowed({ actor: actor(r), request }))
        }
      )
    )
  })

  it("hasAnyGrant holds iff some namespace and id are allowed", () => {
    fc.assert(
      fc.property(
        fc.array(permissionArb, { maxLength: 3 }),
        fc.option(fc.array(permissionArb, { maxLength: 3 }), { nil: undefined }),
        requestArb,
        (a, r, request) => {
          const patterns = [...a, ...(r ?? [])].map((p) => p.namespace.replace(/\.\*\*$/, "").replace(/^\*\*$/, "root"))
          const namespaces = patterns.flatMap((ns) => [ns, `${ns}.child`])
          const expected = namespaces.some((namespace) =>
            ["a", "b", "c", "zz"].some((resourceId) =>
              isAllowed({ actor: actor(a), restrictions: r, request: { ...request, namespace, resourceId } })
            )
          )
          return hasAnyGrant({ ...actor(a), restrictions: r }, request.resource, request.verb) === expected
        }
      )
    )
  })

  it("resourceScope agrees with isAllowed for every id", () => {
    fc.assert(
      fc.property(
        fc.array(permissionArb, { maxLength: 3 }),
        fc.option(fc.array(permissionArb, { maxLength: 3 }), { nil: undefined }),
        requestArb,
        (a, r, request) => {
          const scope = resourceScope({ actor: actor(a), restrictions: r, ...request })
          return ["a", "b", "c", "z"].every((id) => {
            const inScope = scope._tag === "All" || (scope._tag === "Ids" && scope.ids.has(id))
            return inScope === isAllowed({ actor: actor(a), restrictions: r, request: { ...request, resourceId: id } })
          })
        }
      )
    )
  })
})
