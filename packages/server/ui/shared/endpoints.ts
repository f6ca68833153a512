/**
 * Typed endpoint calls for both browser applications: each call is declared by its HttpApi group
 * and endpoint name (`packages/domain/src/http`); its method and path are checked against that
 * declaration at compile time (`declared` does not type-check otherwise) and again by the UI's
 * `*Api.test.ts`, and its answer's type is the endpoint's success schema's type, not one chosen at
 * the call site (the domain's response schemas keep the JSON shapes: strings for times, plain
 * objects). Only types are imported from the declarations, so the bundles carry no server code.
 */
import type { Api } from "./api.ts"

type GroupsOf<A> = A extends { readonly groups: infer G } ? G : never
type EndpointsOf<A, G extends keyof GroupsOf<A>> = GroupsOf<A>[G] extends { readonly endpoints: infer E } ? E : never
type EndpointOf<A, G extends keyof GroupsOf<A>, N extends keyof EndpointsOf<A, G>> = EndpointsOf<A, G>[N]
type MethodOf<E> = E extends { readonly method: infer M } ? M : never
type PathOf<E> = E extends { readonly path: infer P } ? P : never
type SuccessSchema<E> = E extends { readonly "~Success": infer S } ? (S extends ReadonlyArray<infer A> ? A : S) : never

/** What an endpoint answers: its success schema's type. */
export type Answer<A, G extends keyof GroupsOf<A>, N extends keyof EndpointsOf<A, G>> =
  SuccessSchema<EndpointOf<A, G, N>> extends { readonly Type: infer T } ? T : never

/** One declared call: group, endpoint name, and the method and path the declaration has. */
export interface Declared<A, G extends keyof GroupsOf<A>, N extends keyof EndpointsOf<A, G>> {
  readonly group: G
  readonly name: N
  readonly method: MethodOf<EndpointOf<A, G, N>>
  readonly path: PathOf<EndpointOf<A, G, N>>
}

/** Call options: path parameters, query and body. */
export interface CallOptions {
  readonly params?: Readonly<Record<string, string | number>>
  readonly query?: Readonly<Record<string, string | undefined>>
  readonly body?: unknown
}

/** `path` with each `:name` segment replaced by `params[name]`, URL-encoded. */
export const fill = (path: string, params: Readonly<Record<string, string | number>>): string =>
  path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} of ${path}`)
    return encodeURIComponent(String(value))
  })

/**
 * The JSON boundary, the one place a body gets a type: a 2xx body parsed as the type of the
 * endpoint's success schema, which the server encoded it with; the type comes from the
 * declaration, never from the caller.
 */
const parseAnswer = <T>(text: string): T => JSON.parse(text === "" ? "null" : text)

/**
 * `declared` and `call` bound to one HttpApi (type `A`, e.g. `typeof AdminApiV1`) and to the
 * JSON transport of one application.
 */
export const makeEndpoints = <A>(http: Api) => {
  const declared = <G extends keyof GroupsOf<A>, N extends keyof EndpointsOf<A, G> & string>(
    group: G,
    name: N,
    method: MethodOf<EndpointOf<A, G, N>>,
    path: PathOf<EndpointOf<A, G, N>>
  ): Declared<A, G, N> => ({ group, name, method, path })

  const call = async <G extends keyof GroupsOf<A>, N extends keyof EndpointsOf<A, G>>(
    endpoint: Declared<A, G, N>,
    options: CallOptions = {}
  ): Promise<Answer<A, G, N>> => {
    const path = fill(String(endpoint.path), options.params ?? {})
    const method = String(endpoint.method)
    const text =
      method === "GET"
        ? await http.get(path, options.query)
        : await http.send(
            method === "DELETE" || method === "PUT" || method === "PATCH" ? method : "POST",
            path,
            options.body ?? {}
          )
    return parseAnswer<Answer<A, G, N>>(text)
  }

  return { declared, call }
}
