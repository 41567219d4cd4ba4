/**
 * Free ports on 127.0.0.1 for processes that must know their address before they listen (a cluster's runners, a
 * server started in a child process).
 *
 * A port the system hands out for `listen(0)` and takes back is free again for anyone: a test beside it that listens
 * on port 0 may be handed the same one before the runner binds it. These ports come from below the system's
 * ephemeral range (Linux: 32768–60999), which `listen(0)` never hands out, each test worker from its own slice, and
 * each is checked free by listening on it once.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Net from "node:net"

/**
 * Fewer free ports than asked for in this worker's slice (every port of it taken, by this process or another).
 *
 * @since 0.1.0
 * @category Errors
 */
export class NoFreePorts extends Data.TaggedError("NoFreePorts")<{
  readonly wanted: number
  readonly found: number
  readonly from: number
}> {
  override get message() {
    return `Ports.free: ${this.found} of the ${this.wanted} ports wanted are free in ${this.from}–${
      this.from + sliceSize - 1
    }`
  }
}

/** The ports handed out, below the ephemeral range: one slice of `sliceSize` per worker. */
const first = 20_000
const sliceSize = 1_000
const slices = 12

/** The worker's slice: vitest's pool id when there is one, else the process id. */
const worker = Number(process.env.VITEST_POOL_ID ?? process.pid)
const sliceStart = first + (worker % slices) * sliceSize
let next = 0

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = Net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/**
 * `count` distinct free ports on 127.0.0.1, none handed out twice by this process.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const free = (count: number): Effect.Effect<ReadonlyArray<number>, NoFreePorts> =>
  Effect.flatMap(
    Effect.promise(async () => {
      const ports: Array<number> = []
      for (let tried = 0; ports.length < count && tried < sliceSize; tried++) {
        const port = sliceStart + next
        next = (next + 1) % sliceSize
        if (await isFree(port)) ports.push(port)
      }
      return ports
    }),
    (ports) =>
      ports.length < count
        ? Effect.fail(new NoFreePorts({ wanted: count, found: ports.length, from: sliceStart }))
        : Effect.succeed(ports)
  )

/**
 * One free port on 127.0.0.1 (see `free`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const one: Effect.Effect<number, NoFreePorts> = Effect.map(free(1), (ports) => ports[0]!)
