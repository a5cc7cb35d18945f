#!/usr/bin/env bash
# The monitoring files the package ships, checked without a server: the
# alert rules with promtool (check rules, and their unit tests), and every
# query of the Grafana dashboard parsed by promtool as a recording rule
# (Grafana's $__rate_interval and $__range given values). With --queries,
# prints the dashboard's queries instead, a line each ("panel<TAB>query"),
# the interval variables given values that suit a short test.
#
# usage: hack/nodes/deb/monitoring/check.sh [--queries]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
queries() {
	jq -r '.panels[] | .title as $t | .targets[] | "\($t)\t\(.expr)"' moby-ab-dashboard.json |
		sed -e 's/\$__rate_interval/30s/g' -e 's/\$__range/10m/g'
}
if [ "${1:-}" = --queries ]; then
	queries
	exit 0
fi
command -v promtool >/dev/null || {
	echo "monitoring: promtool is missing (Debian's prometheus package; make deps installs it)" >&2
	exit 1
}
promtool check rules moby-ab-alerts.yml
promtool test rules moby-ab-alerts.test.yml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	i=0
	while IFS=$'\t' read -r title expr; do
		i=$((i + 1))
		printf '      - record: dashboard:panel_%d\n        expr: %s\n' "$i" "$(jq -Rn --arg e "$expr" '$e')"
		[ -n "$title" ]
	done < <(queries)
} >"$tmp/dashboard-rules.yml"
promtool check rules "$tmp/dashboard-rules.yml"
