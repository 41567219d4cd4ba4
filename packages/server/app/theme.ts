/**
 * Light and dark: the system's (`prefers-color-scheme`) until the toggle picks one, kept per browser. The choice is
 * the `data-theme` attribute of `<html>`, which the stylesheet reads.
 */
import { useCallback, useEffect, useState } from "react"

export type Theme = "light" | "dark"

const storageKey = "parley.theme"

const system = (): Theme => window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"

const chosen = (): Theme | undefined => {
  const value = window.localStorage.getItem(storageKey)
  return value === "light" || value === "dark" ? value : undefined
}

export const useTheme = (): { readonly theme: Theme; readonly toggle: () => void } => {
  const [theme, setTheme] = useState<Theme>(() => chosen() ?? system())
  useEffect(() => {
    document.documentElement.dataset.theme = theme
  }, [theme])
  useEffect(() => {
    const media = window.matchMedia("(prefers-color-scheme: dark)")
    const changed = () => {
      if (chosen() === undefined) setTheme(system())
    }
    media.addEventListener("change", changed)
    return () => media.removeEventListener("change", changed)
  }, [])
  const toggle = useCallback(() => {
    setTheme((current) => {
      const next = current === "dark" ? "light" : "dark"
      window.localStorage.setItem(storageKey, next)
      return next
    })
  }, [])
  return { theme, toggle }
}
