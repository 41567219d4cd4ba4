/**
 * Type-checks the ```ts code blocks of Markdown files, the way a reader uses them.
 *
 * Each block is its own module. A name it uses without declaring or importing it comes, in this order, from:
 *
 * 1. an earlier block of the same file that declares it (the guides build a file block by block: "Add to agent.ts");
 * 2. the modules the file names in a comment `<!-- snippets: examples/shared/entry.ts ... -->` (for names a guide
 *    takes from its example programs without showing them);
 * 3. the packages' namespaces: `Agent` from `@parley/core`, `Effect` from `effect`, ...
 *
 * So a block is checked with exactly the context a reader has, and a name that exists nowhere fails.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

export interface Block {
  /** The Markdown file, relative to the repository. */
  readonly file: string
  /** Zero-based position among the file's ts blocks. */
  readonly index: number
  /** One-based line of the block's first code line in the Markdown file. */
  readonly line: number
  readonly code: string
}

export interface Problem {
  /** `file:line` in the Markdown file. */
  readonly where: string
  readonly message: string
}

/** The ```ts blocks of a Markdown file. */
export const blocksOf = (repoDir: string, file: string): ReadonlyArray<Block> => {
  const markdown = fs.readFileSync(path.join(repoDir, file), "utf8")
  return Array.from(markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm), (match, index) => ({
    file,
    index,
    line: markdown.slice(0, match.index).split("\n").length + 1,
    code: match[1]
  }))
}

/** The modules a Markdown file names in `<!-- snippets: a.ts b.ts -->`, relative to the repository. */
const contextModulesOf = (repoDir: string, file: string): ReadonlyArray<string> => {
  const match = /<!-- snippets: ([^>]*?) -->/.exec(fs.readFileSync(path.join(repoDir, file), "utf8"))
  return match === null ? [] : match[1].split(/\s+/).filter((name) => name !== "")
}

/** The packages whose exports a block may use without importing them, first match wins. */
const packages = [
  "@parley/core",
  "@parley/policy",
  "@parley/tools",
  "@parley/runtime",
  "@parley/testing",
  "@parley/mistral",
  "effect"
]

/**
 * The names a block declares at its top level (not its imports): `declared`, and among them `unexported`, those
 * without an `export` modifier.
 */
const declaredNames = (code: string): { readonly declared: Set<string>; readonly unexported: Set<string> } => {
  const source = ts.createSourceFile("block.ts", code, ts.ScriptTarget.ES2022, true)
  const declared = new Set<string>()
  const unexported = new Set<string>()
  const add = (name: string, exported: boolean) => {
    declared.add(name)
    if (!exported) unexported.add(name)
  }
  const bind = (name: ts.BindingName, exported: boolean) => {
    if (ts.isIdentifier(name)) return add(name.text, exported)
    for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name, exported)
  }
  const isExported = (statement: ts.Statement) =>
    ts.canHaveModifiers(statement) &&
    (ts.getModifiers(statement) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name, isExported(statement))
    } else if (
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) && statement.name !== undefined
    ) {
      add(statement.name.text, isExported(statement))
    }
  }
  return { declared, unexported }
}

/** The diagnostics that mean "this name is not in scope", and the name. */
const missingName = (diagnostic: ts.Diagnostic): string | undefined => {
  if (![2304, 2503, 2552, 2580, 2582, 2693, 18004].includes(diagnostic.code)) return undefined
  const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
  return /'([^']+)'/.exec(text)?.[1]
}

const compilerOptions = (repoDir: string): ts.CompilerOptions => {
  const base = ts.readConfigFile(path.join(repoDir, "tsconfig.base.json"), ts.sys.readFile).config
  const { options } = ts.convertCompilerOptionsFromJson(base.compilerOptions, repoDir)
  return {
    ...options,
    noEmit: true,
    composite: false,
    declaration: false,
    declarationMap: false,
    emitDeclarationOnly: false,
    incremental: false,
    noUnusedLocals: false,
    isolatedModules: false
  }
}

const relativeSpecifier = (from: string, to: string): string => {
  const relative = path.relative(path.dirname(from), to).replace(/\.ts$/, ".js")
  return relative.startsWith(".") ? relative : `./${relative}`
}

/**
 * Type-checks every block of `files` (relative to `repoDir`) in files under `workDir`, and returns the problems, each
 * at its line in the Markdown file. An empty list: every block compiles.
 */
export const check = (repoDir: string, files: ReadonlyArray<string>, workDir: string): ReadonlyArray<Problem> => {
  fs.rmSync(workDir, { recursive: true, force: true })
  const options = compilerOptions(repoDir)
  const blocks = files.flatMap((file) => blocksOf(repoDir, file))
  const fileOf = (block: Block) =>
    path.join(workDir, block.file.replace(/[/.]/g, "_"), `block${String(block.index).padStart(2, "0")}.ts`)
  const names = new Map(blocks.map((block) => [block, declaredNames(block.code)]))

  // Each block exports what it declares, so that later blocks of its file can import it.
  const body = (block: Block) => {
    const unexported = Array.from(names.get(block)?.unexported ?? [])
    return `${block.code}\nexport {${unexported.length === 0 ? "" : ` ${unexported.join(", ")} `}}\n`
  }
  const write = (block: Block, prelude: string) => {
    fs.mkdirSync(path.dirname(fileOf(block)), { recursive: true })
    fs.writeFileSync(fileOf(block), prelude + body(block))
  }

  // Pass 1: which names is each block missing? Also learn what the packages and the context modules export.
  for (const block of blocks) write(block, "")
  const probe = path.join(workDir, "probe.ts")
  const contextModules = Array.from(new Set(files.flatMap((file) => contextModulesOf(repoDir, file))))
  const probed = [...packages, ...contextModules.map((module) => relativeSpecifier(probe, path.join(repoDir, module)))]
  fs.writeFileSync(
    probe,
    probed.map((specifier, i) => `import * as M${i} from "${specifier}"\n`).join("") + "export {}\n"
  )
  const first = ts.createProgram([probe, ...blocks.map(fileOf)], options)
  const checker = first.getTypeChecker()
  const exportsOf = new Map<string, Set<string>>()
  const probeSource = first.getSourceFile(probe)
  probeSource?.statements.forEach((statement, i) => {
    if (!ts.isImportDeclaration(statement)) return
    const symbol = checker.getSymbolAtLocation(statement.moduleSpecifier)
    const exported = symbol === undefined ? [] : checker.getExportsOfModule(symbol).map((s) => s.name)
    exportsOf.set(i < packages.length ? packages[i] : contextModules[i - packages.length], new Set(exported))
  })
  const missing = new Map<Block, Set<string>>()
  for (const block of blocks) {
    const source = first.getSourceFile(fileOf(block))
    const found = new Set<string>()
    for (const diagnostic of source === undefined ? [] : first.getSemanticDiagnostics(source)) {
      const name = missingName(diagnostic)
      if (name !== undefined) found.add(name)
    }
    missing.set(block, found)
  }

  // Pass 2: the same blocks, each with the imports of its missing names.
  const preludeLines = new Map<Block, number>()
  for (const block of blocks) {
    const imports: Array<string> = []
    for (const name of missing.get(block) ?? []) {
      const earlier = blocks
        .filter((other) => other.file === block.file && other.index < block.index)
        .reverse()
        .find((other) => names.get(other)?.declared.has(name))
      if (earlier !== undefined) {
        imports.push(`import { ${name} } from "${relativeSpecifier(fileOf(block), fileOf(earlier))}"`)
        continue
      }
      const module = contextModulesOf(repoDir, block.file).find((m) => exportsOf.get(m)?.has(name))
      if (module !== undefined) {
        imports.push(`import { ${name} } from "${relativeSpecifier(fileOf(block), path.join(repoDir, module))}"`)
        continue
      }
      const pkg = packages.find((p) => exportsOf.get(p)?.has(name))
      if (pkg !== undefined) imports.push(`import { ${name} } from "${pkg}"`)
    }
    preludeLines.set(block, imports.length)
    write(block, imports.map((line) => `${line}\n`).join(""))
  }
  const second = ts.createProgram(blocks.map(fileOf), options)
  const problems: Array<Problem> = []
  for (const block of blocks) {
    const source = second.getSourceFile(fileOf(block))
    if (source === undefined) continue
    for (const diagnostic of [...second.getSyntacticDiagnostics(source), ...second.getSemanticDiagnostics(source)]) {
      const at = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line
      problems.push({
        where: `${block.file}:${block.line + at - (preludeLines.get(block) ?? 0)}`,
        message: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
      })
    }
  }
  return problems
}
