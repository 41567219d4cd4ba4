/**
 * Tool-call ids for Mistral: they must match `^[a-zA-Z0-9]{9}$` on input. Ids minted by other providers
 * (`call_…`, `toolu_…`, `chatcmpl-tool-…`) are replaced by a deterministic 9-character id derived from the
 * original, the same wherever the original appears, so assistant `tool_calls[].id` and tool `tool_call_id` agree.
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const VALID_ID = /^[a-zA-Z0-9]{9}$/

export const isValid = (id: string): boolean => VALID_ID.test(id)

/** A 53-bit string hash (two interleaved 32-bit multiplicative hashes). */
const hash53 = (input: string): number => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < input.length; i++) {
    const c = input.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

export const fromString = (input: string): string => {
  let n = hash53(input)
  let out = ""
  for (let i = 0; i < 9; i++) {
    out += ALPHABET[n % 62]
    n = Math.floor(n / 62)
  }
  return out
}

/**
 * A per-request mapping from original ids to valid ids. Valid ids are kept; others are hashed. Distinct
 * originals always get distinct ids (a collision is resolved by re-hashing with a counter). `occurrence` tells
 * apart calls that reuse an id (servers that mint the same id every round): the first keeps the mapping of the id
 * itself, later ones get ids of their own, so ids stay unique within the request.
 */
export const makeMapper = (): (original: string, occurrence?: number) => string => {
  const byKey = new Map<string, string>()
  const used = new Set<string>()
  return (original, occurrence = 0) => {
    const key = `${occurrence}\u0000${original}`
    const known = byKey.get(key)
    if (known !== undefined) return known
    const seed = occurrence === 0 ? original : `${original}#${occurrence}`
    let candidate = occurrence === 0 && isValid(original) ? original : fromString(seed)
    for (let salt = 1; used.has(candidate); salt++) {
      candidate = fromString(`${seed}#${salt}`)
    }
    byKey.set(key, candidate)
    used.add(candidate)
    return candidate
  }
}

/**
 * A fresh random 9-character id, for tool calls that arrive without one.
 */
export const mint: Effect.Effect<string> = Effect.map(
  Effect.all(Array.from({ length: 9 }, () => Random.nextIntBetween(0, 62, { halfOpen: true }))),
  (indices) => indices.map((i) => ALPHABET[i]).join("")
)
