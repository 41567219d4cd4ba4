/** The fields every event carries. */
import * as Schema from "effect/Schema"
import { SessionId, TurnId } from "../Ids.js"
import { NonNegativeInt } from "./schemaFields.js"

export const common = {
  sessionId: SessionId,
  turnId: TurnId,
  seq: NonNegativeInt,
  at: Schema.DateTimeUtcFromString
}
