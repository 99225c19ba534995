#!/bin/sh
# pbd run --save-state / --load-state: 12 frames, a checkpoint, then 8 more frames print the
# hashes an uninterrupted 20-frame run prints for frames 13 to 20 (each backend and solver
# given in OPTIONS); a truncated, corrupt or foreign checkpoint, or one made with other
# options, is refused with one line naming it, exit 1, and no checkpoint is written then.
# usage: checkpoint.sh PBD SCENE OTHER_SCENE WORKDIR
set -u
pbd=$1
scene=$2
other=$3
dir=$4
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "$1"
    exit 1
}

for opts in "--solver gs" "--solver jacobi --velocity-update bdf2" \
    "--backend cpu --damping rigid --damping-k 0.1"; do
    # shellcheck disable=SC2086
    "$pbd" run "$scene" $opts --frames 20 --hash --quiet | tail -n 8 >straight.txt ||
        fail "$opts: straight run failed"
    # shellcheck disable=SC2086
    "$pbd" run "$scene" $opts --frames 12 --quiet --save-state ck || fail "$opts: save failed"
    # shellcheck disable=SC2086
    "$pbd" run "$scene" $opts --frames 8 --hash --quiet --load-state ck >resumed.txt ||
        fail "$opts: resume failed"
    [ "$(wc -l <straight.txt)" -eq 8 ] && head -n 1 straight.txt | grep -q '^hash 13 ' ||
        fail "$opts: unexpected hash lines: $(cat straight.txt)"
    cmp -s straight.txt resumed.txt ||
        fail "$opts: resumed hashes differ: $(diff straight.txt resumed.txt | head -n 4)"
done

refused() { # what, expected message, pbd arguments...
    what=$1
    msg=$2
    shift 2
    rm -f out.ck
    out=$("$pbd" "$@" --save-state out.ck 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "$what: exit $rc, expected 1 ($out)"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$what: more than one line: $out"
    printf '%s\n' "$out" | grep -qF "$msg" || fail "$what: message was: $out"
    [ ! -e out.ck ] || fail "$what: a checkpoint was written"
}

"$pbd" run "$scene" --frames 3 --quiet --save-state good.ck || fail "save failed"
size=$(wc -c <good.ck)
head -c $((size - 10)) good.ck >short.ck
refused truncated "short.ck: truncated: found $((size - 10)) bytes" \
    run "$scene" --quiet --load-state short.ck
# One byte in the middle changed: the checksum no longer matches.
cp good.ck bad.ck
printf 'X' | dd of=bad.ck bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
refused corrupt "bad.ck: checksum" run "$scene" --quiet --load-state bad.ck
refused options "good.ck: iterations: found" run "$scene" --quiet --iterations 3 \
    --load-state good.ck
refused scene "good.ck: found a file of $size bytes, expected a checkpoint of this scene" \
    run "$other" --quiet --load-state good.ck
refused missing "nothing.ck: cannot read" run "$scene" --quiet --load-state nothing.ck
echo "garbage" >text.ck
refused text "text.ck: not a pbd checkpoint" run "$scene" --quiet --load-state text.ck
# A checkpoint refreshed in place: loaded, run on, saved over itself.
cp good.ck again.ck
"$pbd" run "$scene" --frames 2 --quiet --load-state again.ck --save-state again.ck ||
    fail "refreshing a checkpoint in place failed"
cmp -s good.ck again.ck && fail "refreshing a checkpoint in place left it as it was"
# Progress after a resume numbers frames from the scene's start, as the hash lines do: the
# run goes on until SIGTERM (a background job ignores SIGINT), sent after its first report
# (2 s in).
"$pbd" run "$scene" --frames 100000000 --load-state good.ck 2>progress.txt >/dev/null &
pid=$!
for _ in $(seq 1 120); do # up to 60 s on a slow machine
    grep -q '^pbd: frame' progress.txt && break
    sleep 0.5
done
kill -TERM "$pid"
wait "$pid"
grep -q '^pbd: frame [0-9]* of 100000003 (' progress.txt ||
    fail "progress after a resume: $(grep frame progress.txt | head -n 2)"
left=$(ls | grep '\.tmp\.')
[ -z "$left" ] || fail "temporary files left: $left"
echo "checkpoint: ok"
