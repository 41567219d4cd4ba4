/** The fields every event carries. */
import * as Schema from "effect/Schema"
import { SessionId, TurnId } from "../Ids.js"

export const common = {
  sessionId: SessionId,
  turnId: TurnId,
  seq: Schema.NonNegativeInt,
  at: Schema.DateTimeUtc
}
