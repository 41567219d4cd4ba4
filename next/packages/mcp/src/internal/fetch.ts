/**
 * The Streamable HTTP transport's `fetch`, watched: when the event stream answering a POST breaks before it ends (the
 * server died mid-call), the SDK only reports it to `onerror` and the call would wait for its timeout. `broken` is
 * told, so the connection's calls end at once with a tool error.
 */
export const watchedFetch =
  (broken: (reason: string) => void) => async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init)
    const body = response.body
    if (init?.method !== "POST" || body === null) return response
    if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return response
    const reader = body.getReader()
    const watched = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read()
          if (done) controller.close()
          else controller.enqueue(value)
        } catch (error) {
          broken(`the connection to the server broke: ${error instanceof Error ? error.message : String(error)}`)
          controller.error(error)
        }
      },
      cancel: (reason) => reader.cancel(reason)
    })
    return new Response(watched, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers
    })
  }
