#!/bin/sh
# Runs every fuzz target of a PBD_FUZZ build for SECONDS each, from a scratch copy of its
# seed corpus (the committed one is not changed), and fails on any finding: a crash, a
# sanitizer report, a leak, an input slower than 10 s or using more than 2 GiB. JOBS targets
# run at once (default: the number of cores), each on one core, so every target gets its
# SECONDS whatever JOBS is. A finding's input is left in WORKDIR (printed); save it under
# tests/fuzz/regressions/TARGET/ with the fix, so that ctest replays it from then on.
# usage: run.sh BUILD_DIR SECONDS [WORKDIR [JOBS]]
set -u
build=$1
seconds=$2
work=${3:-$build/fuzz-work}
jobs=${4:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
here=$(cd "$(dirname "$0")" && pwd)
targets="scene checkpoint mesh_obj mesh_tetgen mesh_msh"

for target in $targets; do
    [ -x "$build/fuzz_$target" ] || {
        echo "fuzz: $build/fuzz_$target not built (configure with CC=clang -DPBD_FUZZ=ON)"
        exit 1
    }
done

# Fuzzes one target; its verdict goes to $work/TARGET/verdict, 0 or 1 to $work/TARGET/rc.
fuzz() {
    target=$1
    dir=$work/$target
    # A target whose directory cannot be made leaves no verdict, which fails the run.
    if ! { rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/findings"; }; then return; fi
    cp "$here/corpus/$target"/* "$dir/corpus/"
    if [ -d "$here/regressions/$target" ]; then cp "$here/regressions/$target"/* "$dir/corpus/"; fi
    dict=
    [ -f "$here/$target.dict" ] && dict="-dict=$here/$target.dict"
    log=$dir/fuzz.log
    # shellcheck disable=SC2086
    "$build/fuzz_$target" "$dir/corpus" $dict -max_total_time="$seconds" -rss_limit_mb=2048 \
        -timeout=10 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$dir/findings/" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -ne 0 ] || [ -n "$(ls "$dir/findings")" ]; then
        {
            echo "fuzz $target: FINDING (exit $rc); input(s): $(ls -d "$dir/findings"/* 2>/dev/null || echo none)"
            grep -m 5 -E "ERROR|SUMMARY|runtime error|deadly signal" "$log"
        } >"$dir/verdict"
        echo 1 >"$dir/rc"
    else
        echo "fuzz $target: ${runs:-?} inputs in ${seconds} s, no finding" >"$dir/verdict"
        echo 0 >"$dir/rc"
    fi
}

mkdir -p "$work" || exit 1
running=0
for target in $targets; do
    rm -f "$work/$target/rc" "$work/$target/verdict"
    fuzz "$target" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait

status=0
for target in $targets; do
    cat "$work/$target/verdict" 2>/dev/null || echo "fuzz $target: no verdict"
    [ "$(cat "$work/$target/rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
