#!/usr/bin/env bash
# bench/gpu.sh's suites in a session of their own that outlives the command starting it, for
# measurements longer than one command may last on the GPU host while the host is held
# between commands (a final judging at K=5, several suites in a row):
#   bash bench/gpu_detached.sh start SUITE ...   start them (bench/gpu.sh's variables apply)
#   bash bench/gpu_detached.sh follow SECONDS    wait for them up to SECONDS, then print their
#                                                log's tail and copy their output to $OUT;
#                                                exit 0 once they ended, 3 while they still run
#   bash bench/gpu_detached.sh stop              end them and every process they started
# Their output (bench/gpu.sh's OUT) is .gpu-detached/out, beside their log and exit status.
set -u
dir=.gpu-detached
case "${1:-}" in
  start)
    shift
    if [ -f "$dir/pid" ] && [ ! -f "$dir/rc" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "suites already running (pid $(cat "$dir/pid")): follow or stop them first"; exit 2
    fi
    rm -rf "$dir" && mkdir -p "$dir/out"
    # Not started from an interactive shell, the background job leads no process group, so
    # setsid makes it a session's leader itself: its pid names the group `stop` ends.
    OUT="$PWD/$dir/out" setsid bash -c \
      'bash bench/gpu.sh "$@" >"'"$dir"'/gpu.log" 2>&1; echo $? >"'"$dir"'/rc"' _ "$@" \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/pid"
    echo "started bench/gpu.sh $* (pid $!)"
    ;;
  follow)
    [ -f "$dir/pid" ] || { echo "nothing started"; exit 2; }
    deadline=$((SECONDS + ${2:-540}))
    while [ ! -f "$dir/rc" ] && [ $SECONDS -lt $deadline ]; do sleep 5; done
    grep -v '"GET /api' "$dir/gpu.log" | tail -c 8000
    if [ -n "${OUT:-}" ]; then cp -r "$dir/out/." "$OUT/" && cp "$dir/gpu.log" "$OUT/"; fi
    if [ -f "$dir/rc" ]; then echo "== ended: exit $(cat "$dir/rc")"; exit 0; fi
    echo "== still running"; exit 3
    ;;
  stop)
    [ -f "$dir/pid" ] && kill -- "-$(cat "$dir/pid")" 2>/dev/null
    sleep 5; [ -f "$dir/pid" ] && kill -9 -- "-$(cat "$dir/pid")" 2>/dev/null
    echo "stopped"
    ;;
  *)
    sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 2
    ;;
esac
