#!/bin/sh
# pbd run under signals: SIGINT early (while the scene loads and the device opens) and late,
# SIGTERM, SIGHUP, and SIGPIPE (its output piped to head). Each must stop the run promptly,
# exit 128 + the signal's number, and leave neither an output file nor a temporary one. A
# signal ignored when pbd starts (SIGHUP under nohup) stays ignored.
# usage: signals.sh PBD SCENE WORKDIR
set -u
pbd=$1
scene=$2
dir=$3
mkdir -p "$dir" && cd "$dir" || exit 1
rm -f sig_* stderr_*

check() { # SIGNAL DELAY EXPECTED_EXIT
    # (env --default-signal: a shell's background job ignores SIGINT, or a harness another
    # signal, and pbd keeps ignored what it was started ignoring.)
    env --default-signal "$pbd" run "$scene" --frames 1000000 --stats "sig_$1_$2.csv" \
        --dump "sig_$1_$2.txt" --quiet 2>"stderr_$1_$2.txt" &
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

# Under nohup (SIGHUP ignored from the start) a hang-up changes nothing: the run goes on, and
# SIGTERM still stops it.
env --default-signal --ignore-signal=HUP "$pbd" run "$scene" --frames 1000000 \
    --stats sig_nohup.csv --quiet 2>stderr_nohup.txt &
pid=$!
sleep 1
kill -HUP "$pid"
sleep 1
if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    echo "SIGHUP ignored at the start: the run stopped (exit $?), expected it to go on"
    exit 1
fi
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || {
    echo "SIGHUP ignored at the start, then SIGTERM: exit $rc, expected 143"
    exit 1
}
echo "SIGHUP ignored at the start: the run went on; SIGTERM stopped it"

# Hashes piped to head: the pipe closes after the first line, the run stops there (SIGPIPE,
# exit 141) and writes no output file.
{
    env --default-signal "$pbd" run "$scene" --frames 1000000 --hash --stats sig_pipe.csv \
        --quiet 2>stderr_pipe.txt
    echo $? >rc_pipe.txt
} | head -n 1 >head_pipe.txt
rc=$(cat rc_pipe.txt)
left=$(ls sig_* 2>/dev/null)
if [ "$rc" -ne 141 ] || [ -n "$left" ] || ! grep -q "^hash 1 " head_pipe.txt; then
    echo "SIGPIPE: exit $rc (expected 141), left '$left', head read '$(cat head_pipe.txt)'"
    cat stderr_pipe.txt
    exit 1
fi
echo "SIGPIPE: exit 141, nothing left"

# A scene read from a FIFO waits for its writer; SIGTERM ends the wait as it ends a run.
rm -f scene_fifo && mkfifo scene_fifo || exit 1
env --default-signal "$pbd" run scene_fifo --quiet 2>stderr_fifo.txt &
pid=$!
sleep 0.5
kill -TERM "$pid"
wait "$pid"
rc=$?
rm -f scene_fifo
if [ "$rc" -ne 143 ] || ! grep -q "terminated (SIGTERM) while the scene loaded" stderr_fifo.txt; then
    echo "SIGTERM while reading a FIFO scene: exit $rc, expected 143; $(cat stderr_fifo.txt)"
    exit 1
fi
echo "SIGTERM while reading a FIFO scene: exit 143"
