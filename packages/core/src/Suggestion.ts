/**
 * "Did you mean …?": the known name closest to a mistyped one, by edit distance, when it is close enough to be a
 * typo. What every refusal that names a field, a tool or an agent the caller got wrong suggests.
 *
 * @example
 * ```ts
 * import { Suggestion } from "@parley/core"
 *
 * Suggestion.closest("remeber", ["_tag", "remember"]) // "remember"
 * Suggestion.closest("x", ["remember"]) // undefined: nothing close
 * ```
 *
 * @since 0.1.0
 */

/** The Levenshtein distance of two strings (one row of the table kept). */
const distance = (a: string, b: string): number => {
  const previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0]
    previous[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j]
      previous[j] = Math.min(previous[j] + 1, previous[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return previous[b.length]
}

/**
 * The candidate closest to `name`, if it is within a typo's reach: at most 3 edits, or a third of the name's length
 * for a long one. The first of equally close candidates wins.
 *
 * @since 0.1.0
 * @category Utils
 */
export const closest = (name: string, candidates: Iterable<string>): string | undefined => {
  let best: { readonly candidate: string; readonly distance: number } | undefined
  for (const candidate of candidates) {
    const d = distance(name, candidate)
    if (best === undefined || d < best.distance) best = { candidate, distance: d }
  }
  return best !== undefined && best.distance <= Math.max(3, Math.floor(name.length / 3)) ? best.candidate : undefined
}
