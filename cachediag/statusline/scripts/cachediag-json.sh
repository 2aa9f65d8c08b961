#!/usr/bin/env bash
# Claude Code status line through `cachediag statusline --json`: the same line as
# prompt-cache.sh plus what Claude Code does not show (cost of misses, subagents), and it
# works on Claude Code versions that send no `prompt_cache` (cachediag computes it from
# the transcript).
#
#   "statusLine": {"type": "command", "command": "bash /path/to/cachediag-json.sh"}
#
# CACHEDIAG overrides the command (default: `cachediag`). Needs bash and jq.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
input=$(cat)
enriched=$(printf '%s' "$input" | ${CACHEDIAG:-cachediag} statusline --json 2>/dev/null | head -n 1)
# cachediag missing or silent: Claude Code's own object is still worth a line.
line=$(printf '%s' "${enriched:-$input}" | bash "$here/prompt-cache.sh" 2>/dev/null | head -n 1)
printf '%s\n' "${line:-cache ?}"
exit 0
