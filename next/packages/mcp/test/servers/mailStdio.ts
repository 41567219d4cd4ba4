/**
 * The mail server as a child process speaking stdio (`node --import tsx mailStdio.ts`). `crash` exits mid-call.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { mailServer, observed } from "./mail.js"

const server = mailServer(observed(), { crash: () => process.exit(3) })
await server.connect(new StdioServerTransport())
