#!/usr/bin/env bash
# Rebuilds server/web/static/editor.js, the submit page's code editor (CodeMirror 6), from
# server/web/editor/ with the versions its package-lock.json pins. The bundle is committed:
# the site serves it from the package and needs no Node at run time.
set -euo pipefail
cd "$(dirname "$0")/../server/web/editor"
npm ci --no-audit --no-fund
npx esbuild src/editor.js --bundle --minify --format=iife --target=es2020 \
  --legal-comments=eof --outfile=../static/editor.js
echo "server/web/static/editor.js: $(wc -c <../static/editor.js) bytes"
