#!/bin/sh
# pbd run's outputs replace only a regular file or a new path: a FIFO or a symbolic link at
# the path is an error and stays as it was; --stats and --dump may not name one file; two
# outputs appear whole, with no temporary file left; a replaced one keeps its mode.
# usage: outputs.sh PBD SCENE WORKDIR
set -u
pbd=$1
scene=$2
dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "$1"
    exit 1
}

mkfifo fifo || fail "cannot make a FIFO"
out=$("$pbd" run "$scene" --frames 2 --quiet --dump fifo 2>&1)
[ $? -eq 1 ] || fail "--dump fifo: expected exit 1"
echo "$out" | grep -q "fifo: found a FIFO, expected a regular file or a new path" ||
    fail "--dump fifo: message was: $out"
[ -p fifo ] || fail "the FIFO was replaced"

ln -s target link
out=$("$pbd" run "$scene" --frames 2 --quiet --stats link 2>&1)
[ $? -eq 1 ] || fail "--stats link: expected exit 1"
echo "$out" | grep -q "link: found a symbolic link" || fail "--stats link: message was: $out"
[ -L link ] && [ ! -e target ] || fail "the link was replaced or followed"

out=$("$pbd" run "$scene" --frames 2 --quiet --stats same --dump same 2>&1)
[ $? -eq 2 ] || fail "--stats same --dump same: expected exit 2"
echo "$out" | grep -q "the same file as --stats" || fail "same path: message was: $out"
[ ! -e same ] || fail "same path: a file was written"

# A full disk stops the run when the statistics stop fitting (not at its end), and leaves
# nothing: a 64 KiB tmpfs in a user namespace where the system allows one.
mkdir -p mnt
if unshare --user --map-root-user --mount sh -c "mount -t tmpfs -o size=64k none mnt" \
    2>/dev/null; then
    unshare --user --map-root-user --mount sh -c "mount -t tmpfs -o size=64k none mnt &&
        '$pbd' run '$scene' --backend cpu --frames 1000000 --stats mnt/s.csv --quiet \
            >full.txt 2>&1; echo \$? >full_rc.txt; ls -A mnt >full_left.txt"
    [ "$(cat full_rc.txt)" -eq 1 ] || fail "--stats on a full disk: exit $(cat full_rc.txt)"
    grep -q "s.csv: write failed: No space left on device; no output files written" full.txt ||
        fail "--stats on a full disk: message was: $(cat full.txt)"
    [ ! -s full_left.txt ] || fail "--stats on a full disk: left $(cat full_left.txt)"
    echo "--stats on a full disk: stopped, nothing left"
else
    echo "--stats on a full disk: left out (no user namespaces here)"
fi

"$pbd" run "$scene" --frames 2 --quiet --stats a.csv --dump b.txt || fail "two outputs: failed"
[ -s a.csv ] && [ -s b.txt ] || fail "two outputs: missing"
out=$("$pbd" run "$scene" --frames 2 --quiet --load-state "" 2>&1)
[ $? -eq 2 ] || fail "--load-state '': expected exit 2"
echo "$out" | grep -q -- "--load-state: found an empty path, expected a checkpoint file" ||
    fail "--load-state '': message was: $out"
# a replaced output keeps the mode its user gave it; a new one gets the umask's
chmod 640 a.csv
"$pbd" run "$scene" --frames 2 --quiet --stats a.csv || fail "replacing a.csv: failed"
[ "$(stat -c %a a.csv)" = 640 ] || fail "a.csv: mode $(stat -c %a a.csv), expected 640 kept"
rm -f c.csv
(umask 027 && "$pbd" run "$scene" --frames 2 --quiet --stats c.csv) || fail "c.csv: failed"
[ "$(stat -c %a c.csv)" = 640 ] || fail "c.csv: mode $(stat -c %a c.csv), expected 640 (umask 027)"
left=$(ls | grep '\.tmp\.')
[ -z "$left" ] || fail "temporary files left: $left"
echo "outputs: ok"
