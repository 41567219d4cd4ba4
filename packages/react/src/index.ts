/**
 * Answering from a component: `useAnswer().answer(open, answer)` sends one of core's typed answers and resolves with
 * the outcome or the server's typed error; the winning answer is known for this client's by its request id.
 *
 * @since 0.1.0
 */
export * as Answer from "./Answer.js"

/**
 * Whether the server answers: `Connecting`, `Connected`, `Unreachable` (recovering by itself), `KeyRefused`.
 *
 * @since 0.1.0
 */
export * as Connection from "./Connection.js"

/**
 * What a session app lists and starts: the agents (with example prompts), the sessions with title, agent, time and
 * state, a new session, a message sent (once however often it is retried), the grants and their revocation.
 *
 * @since 0.1.0
 */
export * as Directory from "./Directory.js"

/**
 * What waits for an answer: the open callbacks of every session of the key, or of one session.
 *
 * @since 0.1.0
 */
export * as Inbox from "./Inbox.js"

/**
 * The client the hooks share (the HTTP transport to one server), its `Provider` and `useClient`.
 *
 * @since 0.1.0
 */
export * as ParleyClient from "./ParleyClient.js"

/**
 * A session in a component: its record, its events (resumed, each once, in order), its turns.
 *
 * @since 0.1.0
 */
export * as Session from "./Session.js"
