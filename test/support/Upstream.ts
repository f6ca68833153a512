/**
 * A routed local upstream for black-box tests: the test kit's `FakeUpstream` (`@svc/testing`,
 * docs/testing.md), answering by path prefix through replaceable handlers (unrouted paths answer
 * 404) and recording every request.
 */
export { type Answer, type SeenRequest, startUpstream, type Upstream } from "@svc/testing/FakeUpstream"
