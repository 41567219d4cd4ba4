/**
 * Agents: define, run, start or find sessions.
 *
 * @since 0.1.0
 */
export * as Agent from "./Agent.js"

/**
 * The serialisable definition of an agent.
 *
 * @since 0.1.0
 */
export * as AgentSpec from "./AgentSpec.js"

/**
 * Answers to callbacks, and the check that an answer fits its callback.
 *
 * @since 0.1.0
 */
export * as Answer from "./Answer.js"

/**
 * Callbacks: the questions a turn asks the program.
 *
 * @since 0.1.0
 */
export * as Callback from "./Callback.js"

/**
 * The service that answers callbacks while a run waits.
 *
 * @since 0.1.0
 */
export * as CallbackHandler from "./CallbackHandler.js"

/**
 * Waking a `Queue`'s taker as soon as the code that offered to it is done (a microtask).
 *
 * @since 0.1.0
 */
export * as Handover from "./Handover.js"

/**
 * Branded identifiers: sessions, turns, callbacks and the stable ids of tools.
 *
 * @since 0.1.0
 */
export * as Ids from "./Ids.js"

/**
 * The callbacks open across sessions, listed and answered by id from any process.
 *
 * @since 0.1.0
 */
export * as Inbox from "./Inbox.js"

/**
 * The typed errors of Parley.
 *
 * @since 0.1.0
 */
export * as ParleyError from "./ParleyError.js"

/**
 * The serialisable data of a permission policy.
 *
 * @since 0.1.0
 */
export * as Permissions from "./Permissions.js"

/**
 * Who or what decided a callback (`answeredBy`): a handler, a client, a grant, the policy, an API key.
 *
 * @since 0.1.0
 */
export * as Principal from "./Principal.js"

/**
 * The HTTP contract of a Parley server (an `HttpApi`, schemas only).
 *
 * @since 0.1.0
 */
export * as ProtocolApi from "./ProtocolApi.js"

/**
 * Sessions: conversations with one agent, made of turns.
 *
 * @since 0.1.0
 */
export * as Session from "./Session.js"

/**
 * "Did you mean …?": the known name closest to a mistyped one.
 *
 * @since 0.1.0
 */
export * as Suggestion from "./Suggestion.js"

/**
 * The serialisable description of a tool.
 *
 * @since 0.1.0
 */
export * as ToolSpec from "./ToolSpec.js"

/**
 * The protocol port between the client API and a runtime.
 *
 * @since 0.1.0
 */
export * as Transport from "./Transport.js"

/**
 * Turns: wait for them, follow their events, answer their callbacks by id.
 *
 * @since 0.1.0
 */
export * as Turn from "./Turn.js"

/**
 * The events of a session's log.
 *
 * @since 0.1.0
 */
export * as TurnEvent from "./TurnEvent.js"

/**
 * How a turn stands.
 *
 * @since 0.1.0
 */
export * as TurnState from "./TurnState.js"

/**
 * Webhooks: the payload a receiver gets, the signature scheme (`sign`, `verify`, `isValid`) and the delivery log.
 *
 * @since 0.1.0
 */
export * as Webhook from "./Webhook.js"

/**
 * Answer links: signed, single-use, expiring URLs that answer one approval without a key.
 *
 * @since 0.1.0
 */
export * as AnswerLink from "./AnswerLink.js"
