#!/usr/bin/env bash
# memholder runs natively: reports in the documented format, counts up, and
# answers on its TCP port.
set -euo pipefail
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
gcc -O2 -Wall -Werror -static -o "$tmp/memholder" "$(dirname "$0")/memholder.c"
"$tmp/memholder" -r 200 -p 47123 8 >"$tmp/out" &
pid=$!
sleep 1.5
reply=$(exec 3<>/dev/tcp/127.0.0.1/47123 && cat <&3)
kill -TERM "$pid"
wait "$pid"
re='^memholder mib=8 count=[0-9]+ verified_passes=[0-9]+ maxgap_ms=[0-9.]+ lastgap_ms=[0-9.]+ ok$'
[ "$(grep -cEv "$re" "$tmp/out")" = 0 ] || { echo "unexpected lines:"; grep -Ev "$re" "$tmp/out"; exit 1; }
first=$(sed -n '1s/.* count=\([0-9]*\) .*/\1/p' "$tmp/out")
last=$(sed -n '$s/.* count=\([0-9]*\) .*/\1/p' "$tmp/out")
[ "$last" -gt "$first" ] || { echo "count did not increase: $first -> $last"; exit 1; }
grep -q 'verified_passes=[1-9]' "$tmp/out" || { echo "memory never verified"; exit 1; }
[[ $reply =~ ^mib=8\ count=[0-9]+\ .*\ ok$ ]] || { echo "bad TCP reply: $reply"; exit 1; }
echo "memholder ok: $(wc -l <"$tmp/out") reports, count $first -> $last"
