#!/bin/sh
# Start the bundled demo service, dump its stacks, its stacks with each
# frame's variables and with the native frames of one thread, its asyncio
# task graph and the stacks as JSON, profile it for two seconds (functions,
# then where its asyncio tasks await), write a flame graph, then stop it.
# Usage: examples/demo.sh [BUILDDIR]
set -eu
cd "$(dirname "$0")/.."
bin=${1:-build}/cli/pystack-dump
python3 examples/demo_service.py &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
sleep 1
echo "\$ pystack-dump $pid"
"$bin" "$pid"
echo
echo "\$ pystack-dump --locals --no-source $pid | head -30"
"$bin" --locals --no-source "$pid" | head -30
echo
echo "\$ pystack-dump --native --no-source $pid | head -30"
"$bin" --native --no-source "$pid" | head -30
echo
echo "\$ pystack-dump --tasks $pid"
"$bin" --tasks "$pid"
echo
echo "\$ pystack-dump --json $pid | python3 -m json.tool | head -20"
"$bin" --json "$pid" | python3 -m json.tool | head -20
echo
echo "\$ pystack-dump sample -d 2 --limit 8 -f table $pid"
"$bin" sample -d 2 --limit 8 -f table "$pid"
echo
echo "\$ pystack-dump sample -m async -d 2 --limit 4 -f table $pid"
"$bin" sample -m async -d 2 --limit 4 -f table "$pid"
echo
echo "\$ pystack-dump sample -d 2 -o /tmp/demo-profile.html $pid"
"$bin" sample -d 2 -o /tmp/demo-profile.html "$pid"
