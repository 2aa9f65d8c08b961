#!/usr/bin/env bash
# Claude Code status line through `cachediag statusline --json`: the same line as
# prompt-cache.sh plus what Claude Code does not show (cost of misses, subagents), and it
# works on Claude Code versions that send no `prompt_cache` (cachediag computes it from
# the transcript).
#
#   "statusLine": {"type": "command", "command": "bash /path/to/cachediag-json.sh"}
#
# CACHEDIAG overrides the command (default: `cachediag`): the path of one executable (it
# may hold spaces), or a command line split on spaces (`python3 -m cachediag`). JQ names
# jq the same way (see prompt-cache.sh). `cachediag statusline install --script
# cachediag-jq` sets both to absolute paths: Claude Code may run this with a PATH that
# has neither. Needs bash and jq.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
input=$(cat)
if [ -n "${CACHEDIAG:-}" ] && [ -f "$CACHEDIAG" ] && [ -x "$CACHEDIAG" ]; then
  enriched=$(printf '%s' "$input" | "$CACHEDIAG" statusline --json 2>/dev/null | head -n 1)
else
  enriched=$(printf '%s' "$input" | ${CACHEDIAG:-cachediag} statusline --json 2>/dev/null | head -n 1)
fi
# cachediag missing or silent: Claude Code's own object is still worth a line.
line=$(printf '%s' "${enriched:-$input}" | "${BASH:-bash}" "$here/prompt-cache.sh" 2>/dev/null | head -n 1)
printf '%s\n' "${line:-cache ?}"
exit 0
