/**
 * Parley's `Transport` over HTTP, against a Parley server.
 *
 * @since 0.1.0
 */
export * as HttpTransport from "./HttpTransport.js"
