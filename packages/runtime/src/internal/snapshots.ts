/**
 * Snapshots of a tree's projection, for the engine: a tree is loaded from its latest snapshot and the events after it
 * (`restore`); the actor saves one in the background when its log grew by enough events since the last (`save`). A
 * snapshot is a cache of the log's fold: one that cannot be used (another layout, a state that does not decode or does
 * not fit the tree) is ignored with a warning and the log replayed from `seq` 0; a failed save is only logged.
 */
import type * as SessionStore from "@parley/log/SessionStore"
import * as SnapshotCodec from "@parley/log/SnapshotCodec"
import * as TreeState from "@parley/log/TreeState"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

/** How many events a tree's log grows by between two snapshots, unless the engine's options say otherwise. */
export const defaultEvery = 500

/** A state restored from the store: from a snapshot at `seq` (0: none), with the events after it. */
export interface Restored {
  readonly state: TreeState.TreeState
  /** The `seq` of the snapshot the state started from (0 when the log was replayed from its start). */
  readonly seq: number
}

/** The state a usable snapshot holds, or why it is not used. */
const usable = (
  tree: SessionStore.StoredTree,
  snapshot: SessionStore.Snapshot
): Result.Result<TreeState.TreeState, string> => {
  if (snapshot.version !== SnapshotCodec.version) {
    return Result.fail(`it has version ${snapshot.version}, this engine reads version ${SnapshotCodec.version}`)
  }
  return Result.flatMap(
    Result.mapError(
      SnapshotCodec.decode(snapshot.state),
      (error) => `it does not decode: ${error.message}`
    ),
    (state) =>
      state.treeId !== tree.treeId
        ? Result.fail(`it is a state of tree ${state.treeId}`)
        : state.nextSeq !== snapshot.seq
        ? Result.fail(`its state ends at seq ${state.nextSeq}, not at its seq ${snapshot.seq}`)
        : Result.succeed(state)
  )
}

/** The tree's state: its latest usable snapshot, folded on with the events after it, or its whole log. */
export const restore = (
  store: SessionStore.Services,
  tree: SessionStore.StoredTree
): Effect.Effect<Restored, SessionStore.StoreError> =>
  Effect.gen(function*() {
    const snapshot = yield* store.snapshots.load(tree.treeId).pipe(
      Effect.catch((error) =>
        Effect.as(
          Effect.logWarning(`the snapshot of tree ${tree.treeId} could not be read: replaying its log`, error),
          Option.none()
        )
      )
    )
    let base: TreeState.TreeState | undefined
    if (Option.isSome(snapshot)) {
      const state = usable(tree, snapshot.value)
      if (Result.isSuccess(state)) base = state.success
      else {
        yield* Effect.logWarning(
          `the snapshot of tree ${tree.treeId} at seq ${snapshot.value.seq} is ignored (${state.failure}): replaying its log`
        )
      }
    }
    const from = base?.nextSeq ?? 0
    const events = yield* store.eventLog.read(tree.treeId, from)
    return { state: TreeState.foldFrom(base ?? TreeState.empty(tree), events), seq: from }
  })

/** Saves a snapshot of `state`; a failure is logged, never raised. */
export const save = (store: SessionStore.Services, state: TreeState.TreeState): Effect.Effect<void> =>
  Effect.suspend(() => {
    const json = SnapshotCodec.encode(state)
    if (Result.isFailure(json)) {
      return Effect.logWarning(
        `the state of tree ${state.treeId} at seq ${state.nextSeq} does not encode: no snapshot`,
        json.failure.message
      )
    }
    return store.snapshots.save(state.treeId, {
      seq: state.nextSeq,
      version: SnapshotCodec.version,
      state: json.success
    })
  }).pipe(
    Effect.catchCause((cause) =>
      Effect.logWarning(`a snapshot of tree ${state.treeId} at seq ${state.nextSeq} could not be saved`, cause)
    )
  )
