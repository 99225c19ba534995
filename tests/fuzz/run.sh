#!/bin/sh
# Runs every fuzz target of a PBD_FUZZ build for SECONDS each, from a scratch copy of its
# seed corpus (the committed one is not changed), and fails on any finding: a crash, a
# sanitizer report, a leak, an input slower than 10 s or using more than 2 GiB. A finding's
# input is left in WORKDIR (printed); save it under tests/fuzz/regressions/TARGET/ with the
# fix, so that ctest replays it from then on.
# usage: run.sh BUILD_DIR SECONDS [WORKDIR]
set -u
build=$1
seconds=$2
work=${3:-$build/fuzz-work}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for target in scene checkpoint mesh_obj mesh_tetgen mesh_msh; do
    exe=$build/fuzz_$target
    [ -x "$exe" ] || {
        echo "fuzz: $exe not built (configure with CC=clang -DPBD_FUZZ=ON)"
        exit 1
    }
    rm -rf "$work/$target" && mkdir -p "$work/$target/corpus" "$work/$target/findings" || exit 1
    cp "$here/corpus/$target"/* "$work/$target/corpus/"
    if [ -d "$here/regressions/$target" ]; then cp "$here/regressions/$target"/* "$work/$target/corpus/"; fi
    dict=
    [ -f "$here/$target.dict" ] && dict="-dict=$here/$target.dict"
    log=$work/$target/fuzz.log
    # shellcheck disable=SC2086
    "$exe" "$work/$target/corpus" $dict -max_total_time="$seconds" -rss_limit_mb=2048 \
        -timeout=10 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$work/$target/findings/" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -ne 0 ] || [ -n "$(ls "$work/$target/findings")" ]; then
        echo "fuzz $target: FINDING (exit $rc); input(s): $(ls -d "$work/$target/findings"/*)"
        grep -m 5 -E "ERROR|SUMMARY|runtime error|deadly signal" "$log"
        status=1
    else
        echo "fuzz $target: ${runs:-?} inputs in ${seconds} s, no finding"
    fi
done
exit $status
