#!/usr/bin/env bash
# Claude Code status line from its own `prompt_cache` object (v2.1.251+), with jq only.
#
#   "statusLine": {"type": "command", "command": "bash /path/to/prompt-cache.sh"}
#
# Prints e.g. `cache 91% · warm 3:12 · 2 misses · last: tools_changed (+5 tools)`.
# When the object also carries cachediag's additions (see cachediag-json.sh), the cost of
# the misses and the subagents' cache health are shown too. Every field is type-checked:
# a missing, null or wrongly typed field is left out, and any failure prints `cache ?`.
# Before the session's first response (no transcript yet) it prints `cache: no response
# yet`; a miss whose cause is unknown (`last_miss_cause` null) shows `last: unknown`,
# unless cachediag named the same miss's cause (its `computed` object, from captures).
# Needs bash and jq (no bc: jq does the arithmetic and reads the clock); JQ names a jq
# that is not on PATH (Claude Code may run status lines with PATH=/usr/bin:/bin).

jq=${JQ:-jq}
if ! command -v "$jq" >/dev/null 2>&1; then
  echo "cache ? (jq not found)"
  exit 0
fi

program='
def num: if type == "number" and . == . and (. | isinfinite | not) then . else null end;
def obj: if type == "object" then . else null end;
def pad2: tostring | if length < 2 then "0" + . else . end;
def clock: floor | if . >= 3600 then "\(. / 3600 | floor):\(. % 3600 / 60 | floor | pad2):\(. % 60 | pad2)"
                   else "\(. / 60 | floor):\(. % 60 | pad2)" end;
def usd: if . >= 0.01 or . == 0 then "$" + ((. * 100 | round) / 100 | tostring
           | if test("\\.") then (if test("\\.[0-9]$") then . + "0" else . end) else . + ".00" end)
         else "<$0.01" end;
def safe: gsub("[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}]"; "?");
def cut($n): if length > $n then .[0:$n - 1] + "…" else . end;
def named($sign; $names; $n):
  if $n > 0 and ($names | type) == "array" and ($names | length) == $n
  then "\($sign)\($n | floor): \($names[0] | tostring | safe | cut(40))\(if $n > 1 then ", …" else "" end)"
  else null end;
def plural($word): floor as $n | "\($n) \($word)\(if $n == 1 then "" elif $word == "miss" then "es" else "s" end)";
def segments($pc; $cd):
  ($pc.hit_ratio | num) as $ratio
  | ($pc.expires_at | num) as $expires
  | ($pc.requests | num) as $requests
  | ($pc.misses | num) as $misses
  | ($cd.computed | obj) as $computed
  | (($pc.last_miss_cause | obj) // (
      if $computed != null and ($computed.misses | num) == ($pc.misses | num)
         and ($pc.last_miss_at | num) != null and ($computed.last_miss_at | num) != null
         and ((($pc.last_miss_at | num) - ($computed.last_miss_at | num)) | fabs) < 5
      then ($computed.last_miss_cause | obj) else null end)) as $cause
  | ($cd.miss_cost_usd | num) as $cost
  | ($cd.subagents | obj) as $agents
  | (if $ratio == null then "cache –"
     else "cache \(if $ratio >= 1 then 100 else ($ratio * 100 | floor) end)%" end),
    (if ($requests // 0) <= 0 then empty
     elif $expires != null then
       ($expires - now) as $left | if $left > 0 then "warm \($left | clock)" else "cold" end
     elif $pc.warm == true then "warm"
     else "cold" end),
    (if $misses == null or $misses < 0 then empty
     else ($misses | plural("miss")) + (if $cost != null and $misses > 0 then " (\($cost | usd))" else "" end) end),
    (if $cause == null then (if ($misses // 0) > 0 and $misses <= 1e15 then "last: unknown" else empty end)
     else ($cause.causes | if type == "array" then [.[] | strings | select(length > 0) | safe | cut(40)][:3] else [] end) as $names
     | ($cause.tools_added | num) as $added
     | ($cause.tools_removed | num) as $removed
     | ($cause.system_char_delta | num) as $delta
     | ($cd.last_miss_cause | obj) as $which
     | ([named("+"; $which.tools_added_names; $added // 0), named("-"; $which.tools_removed_names; $removed // 0)]) as $byname
     | ([(if ($added // 0) > 0 then "+\($added | floor)" else empty end),
         (if ($removed // 0) > 0 then "-\($removed | floor)" else empty end)] | join("/")) as $tools
     | ($tools != "" and ($byname | map(select(. != null)) | length) == ([$added, $removed] | map(select((. // 0) > 0)) | length)) as $withnames
     | ([(if $withnames then $byname[] | strings
          elif $tools != "" then "\($tools) tools" else empty end),
         (if ($delta // 0) != 0 then "system \(if $delta > 0 then "+" else "" end)\($delta | floor) chars" else empty end)]
        | join(if $withnames then "; " else ", " end)) as $detail
     | if ($names | length) == 0 then (if ($misses // 0) > 0 and $misses <= 1e15 then "last: unknown" else empty end)
       else "last: \($names | join("+"))\(if $detail != "" then " (\($detail))" else "" end)" end
     end),
    (if $agents == null or (($agents.streams | num) // 0) <= 0 then empty
     else ($agents.hit_ratio | num) as $ar | (($agents.misses | num) // 0) as $am
     | ($agents.miss_cost_usd | num) as $ac
     | "agents \($agents.streams | floor): \(if $ar == null then "–" else "\($ar * 100 | floor)%" end)"
       + (if $am > 0 then ", \($am | plural("miss"))\(if $ac != null then " (\($ac | usd))" else "" end)" else "" end)
     end);
def pending($in):
  ($in.session_id | if type == "string" and length > 0 then . else null end) as $sid
  | ($in.transcript_path | if type == "string" then . else null end) as $path
  | (($in.cost | obj // {}).total_cost_usd | num) as $spent
  | if $sid != null and $path != null and ($path | test("\n") | not) and ($spent // 0) <= 0
    then $path else empty end;
(try input catch null) as $in
| ($in | obj) as $in
| if $in == null then "cache ?"
  elif ($in.prompt_cache | obj) == null then
    if ($in.cachediag | obj | .transcript) == "not_written_yet" then "cache: no response yet"
    else "cache ?", pending($in) end
  else [segments($in.prompt_cache; ($in.cachediag | obj) // {})] | join(" · ") end
'

# Without prompt_cache the program also names the session's own transcript: Claude Code
# has not written it before the first response, which is no failure.
{ IFS= read -r line; IFS= read -r pending; } < <("$jq" -rn "try ($program) catch \"cache ?\"" 2>/dev/null)
if [ "$line" = "cache ?" ] && [ -n "$pending" ] && [ ! -e "$pending" ] && [ ! -L "$pending" ]; then
  line="cache: no response yet"
fi
printf '%s\n' "${line:-cache ?}"
exit 0
