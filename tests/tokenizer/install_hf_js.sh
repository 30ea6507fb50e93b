#!/usr/bin/env bash
# Installs the oracle's reference, Hugging Face's pure-JS tokenizers, into DIR (once: a later run
# finds it). The version is pinned so every machine compares against the same implementation.
set -euo pipefail
dir=${1:?usage: install_hf_js.sh DIR}
version=0.2.0
installed="$dir/node_modules/@huggingface/tokenizers/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
  exit 0
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "$tool not found: bash scripts/setup.sh installs nodejs and npm" >&2; exit 1; }
done
mkdir -p "$dir"
npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error "@huggingface/tokenizers@$version"
