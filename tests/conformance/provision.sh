#!/usr/bin/env bash
# Provision the MCP conformance suite for tests/conformance: Node 22 (npm package node@22, installed
# beside the machine's Node 20), @modelcontextprotocol/conformance and @modelcontextprotocol/server-everything,
# pinned, under ~/.cache/finmcp/conformance (or $FINMCP_CONFORMANCE_HOME). A stamp holding the pins
# makes a second run a no-op; change a pin and the next run reinstalls. Run by .ci/run before
# `make test`; the tests never install anything (they skip locally, fail under FINMCP_CI=1, when
# this has not run).
set -euo pipefail
NODE_PIN="node@22.23.3"
SUITE_PIN="@modelcontextprotocol/conformance@0.1.16"
EVERYTHING_PIN="@modelcontextprotocol/server-everything@2026.8.31"
HOME_DIR="${FINMCP_CONFORMANCE_HOME:-$HOME/.cache/finmcp/conformance}"
STAMP="$HOME_DIR/.stamp"
WANT="$NODE_PIN $SUITE_PIN $EVERYTHING_PIN"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
    && [ -x "$HOME_DIR/node_modules/node/bin/node" ] \
    && [ -f "$HOME_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] \
    && [ -f "$HOME_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
    echo "conformance suite already provisioned in $HOME_DIR"
    exit 0
fi
command -v npm >/dev/null || { echo "provision.sh: npm is needed (apt-get install npm)" >&2; exit 1; }
rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR"
printf '{"name": "finmcp-conformance", "private": true}\n' > "$HOME_DIR/package.json"
npm install --prefix "$HOME_DIR" --no-audit --no-fund --loglevel=error "$NODE_PIN" "$SUITE_PIN" "$EVERYTHING_PIN"
"$HOME_DIR/node_modules/node/bin/node" --version | grep -q '^v22\.' \
    || { echo "provision.sh: node@22 did not install a Node 22 binary" >&2; exit 1; }
echo "$WANT" > "$STAMP"
echo "conformance suite provisioned in $HOME_DIR"
