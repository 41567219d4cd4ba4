/**
 * Node's HTTP server, which drains before it closes (`ParleyServer.layerHttpServer`).
 */
import * as Duration from "effect/Duration"
import { Server, type ServerOptions } from "node:http"

/**
 * Node's HTTP server, which drains before it closes. `NodeHttpServer` calls `close` when the layer stops (as the
 * event streams end and new requests start to get their 503); the server then goes on listening until no connection
 * is left, for at most `drainTimeout` from the call, so a client that reconnects meanwhile is answered (503, the
 * connection closed) rather than refused or left waiting. Meanwhile each connection is closed as soon as it is idle (a
 * kept-alive one is not waited for), and every connection left when `drainTimeout` has passed: a request that never
 * ends (a body that never comes) would hold Node's `close` forever.
 */
class Draining extends Server {
  private draining = false
  private readonly drainTimeout: number

  constructor(drainTimeout: number, options: ServerOptions) {
    super(options)
    this.drainTimeout = drainTimeout
  }

  override close(callback?: (error?: Error) => void): this {
    // Called again (`NodeHttpServer` does, if its first wait timed out): the same close, its callback on its end.
    if (this.draining) {
      if (callback !== undefined) this.once("close", () => callback())
      return this
    }
    this.draining = true
    const started = Date.now()
    const everyone = setTimeout(() => this.closeAllConnections(), this.drainTimeout)
    const drain = setInterval(() => {
      this.closeIdleConnections()
      if (!this.listening) return
      this.getConnections((error, count) => {
        if (this.listening && (error !== null || count === 0 || Date.now() - started >= this.drainTimeout)) {
          super.close(callback)
        }
      })
    }, 20)
    this.once("close", () => {
      clearTimeout(everyone)
      clearInterval(drain)
    })
    return this
  }
}

/**
 * A server that drains for at most `timeout`: `NodeHttpServer` interrupts the requests still running once its own
 * graceful wait (the same `timeout`) is over; a quarter of a second later the connections left are closed.
 */
export const make = (timeout: Duration.Duration, options: ServerOptions = {}): Server =>
  new Draining(Duration.toMillis(timeout) + 250, options)
