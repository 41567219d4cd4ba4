/**
 * The Parley session server: `ProtocolApi` over the engine, with SSE, API keys and tenants, limits and logs.
 *
 * @since 0.1.0
 */
export * as ParleyServer from "./ParleyServer.js"
