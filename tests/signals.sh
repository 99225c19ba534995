#!/bin/sh
# pbd run under signals: SIGINT early (while the scene loads and the device opens) and late,
# SIGTERM and SIGHUP. Each must stop the run promptly, exit 128 + the signal's number, and
# leave neither an output file nor a temporary one.
# usage: signals.sh PBD SCENE WORKDIR
set -u
pbd=$1
scene=$2
dir=$3
mkdir -p "$dir" && cd "$dir" || exit 1
rm -f sig_* stderr_*

check() { # SIGNAL DELAY EXPECTED_EXIT
    "$pbd" run "$scene" --frames 1000000 --stats "sig_$1_$2.csv" --dump "sig_$1_$2.txt" \
        --quiet 2>"stderr_$1_$2.txt" &
    pid=$!
    sleep "$2"
    kill "-$1" "$pid"
    t0=$(date +%s%N)
    # A run that missed the signal would go on for hours: give it 10 s, then fail.
    n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        wait "$pid"
        rm -f sig_*
        echo "SIG$1 at $2 s: still running 10 s after the signal"
        exit 1
    fi
    wait "$pid"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" -ne "$3" ]; then
        echo "SIG$1 at $2 s: exit $rc, expected $3; its stderr:"
        cat "stderr_$1_$2.txt"
        exit 1
    fi
    # A frame of the scene takes a few ms: stopping takes well under a second.
    if [ "$ms" -gt 1000 ]; then
        echo "SIG$1 at $2 s: stopped $ms ms after the signal, expected under 1000"
        exit 1
    fi
    left=$(ls sig_* 2>/dev/null)
    if [ -n "$left" ]; then
        echo "SIG$1 at $2 s: left $left"
        exit 1
    fi
    echo "SIG$1 at $2 s: exit $rc, stopped in $ms ms, nothing left"
}

check INT 0.05 130
check INT 1 130
check TERM 1 143
check HUP 1 129
