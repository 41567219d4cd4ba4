/**
 * A snapshot of a tree's projection as JSON text (`encodeSnapshot` / `decodeSnapshot`, `snapshotVersion`): the
 * engine's storage format, loaded with the events after it.
 *
 * @since 0.1.0
 */
export * as Snapshot from "./Snapshot.js"

/**
 * The state of a tree as a pure projection of its log: `evolve` / `fold`, and the queries the engine decides from.
 *
 * @since 0.1.0
 */
export * as TreeState from "./TreeState.js"
