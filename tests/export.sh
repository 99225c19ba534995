#!/bin/sh
# pbd run --export: every format read back by an independent reader (export_check.py: meshio
# for OBJ, PLY and VTU, its own PC2 reader) and compared with --dump at the same frame; the
# PVD lists every frame; a full disk (a file size limit, and a small tmpfs where a user
# namespace can mount one) and SIGINT leave the frames written before intact and no partial
# file.
# usage: export.sh PBD SCENE WORKDIR
set -u
pbd=$1
scene=$2
dir=$3
check="/usr/bin/python3 $(dirname "$0")/export_check.py"
if ! /usr/bin/python3 -c 'import meshio' 2>/dev/null; then
    echo "skipped: /usr/bin/python3 cannot import meshio (install python3-meshio)"
    exit 77
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "FAIL: $1"
    exit 1
}
wait_for() { # FILE: until it exists (10 s at most), so a signal comes after the export began
    n=0
    while [ ! -e "$1" ] && [ $n -lt 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}
run() { # FORMAT EXTRA...: 10 frames of the scene, every 5th exported, and the dump
    f=$1
    shift
    "$pbd" run "$scene" --backend cpu --frames 10 --export-every 5 --export "$f" --format "$f" \
        --dump "dump_$f.txt" "$@" >"out_$f.txt" 2>&1 || {
        cat "out_$f.txt"
        fail "--format $f: exit $?"
    }
}

# The scene: a cloth of 6 x 5 (40 triangles), a Neo-Hookean box of 2 x 1 x 2 cells (24 tets,
# 32 surface triangles), a box with volume constraints (6 tets, 12 triangles), a box of edges
# (12 triangles, no tets) and a rope of 8 particles (neither).
names="sheet,soft box,volume box,edge box,rope"
bodies=$(/usr/bin/python3 -c 'print(",".join(str(b) for b, n in enumerate([30, 18, 8, 8, 8]) for _ in range(n)))')
for f in obj ply vtk; do
    run $f
    ext=$f
    [ $f = vtk ] && ext=vtu
    $check files $f $ext 0,5,10 || fail "--format $f: files"
    case $f in
    obj) $check compare obj obj 10 dump_obj.txt --faces 96 --bodies "$names" || fail obj ;;
    ply) $check compare ply ply 10 dump_ply.txt --faces 96 || fail ply ;;
    vtk) $check compare vtk vtk 10 dump_vtk.txt --cells tetra=30,triangle=52,vertex=8 \
        --bodies "$bodies" || fail vtk
        $check pvd vtk 0.01 || fail pvd ;;
    esac
done
# PLY face indices are 16-bit up to 65,536 vertices and 32-bit past them: a cloth of
# 257 x 257 (66,049 vertices, 131,072 triangles) reads back as well.
head -c 400 ply/frame_000010.ply | grep -aq "property list uchar uint16 vertex_indices" ||
    fail "ply: 16-bit face indices"
printf '%s' '{"bodies": [{"type": "cloth", "resolution": [257, 257], "size": [2, 2],
 "center": [0, 1, 0], "pin": "corners"}]}' >wide.json
"$pbd" run wide.json --frames 5 --export-every 5 --export wide --format ply --dump dump_wide.txt \
    >out_wide.txt 2>&1 || fail "wide ply: exit $?"
head -c 400 wide/frame_000005.ply | grep -aq "property list uchar int vertex_indices" ||
    fail "wide ply: 32-bit face indices"
$check compare ply wide 5 dump_wide.txt --faces 131072 || fail "wide ply"
run pc2
$check files pc2 obj 0 || fail "pc2: files"
$check pc2 pc2 dump_pc2.txt 0 5 3 || fail pc2
grep -q "exported     3 frames (pc2, every 5) to pc2" out_pc2.txt || fail "pc2: summary line"

# File names as wide as the run's last frame needs: 7 digits for a run of 1,000,000 frames.
# (env --default-signal: a shell's background job ignores SIGINT, and pbd keeps it ignored.)
env --default-signal "$pbd" run "$scene" --backend cpu --frames 1000000 --export-every 400000 --export wide \
    --format ply --quiet --dt 0.001 --iterations 1 --substeps 1 >/dev/null 2>&1 &
pid=$!
wait_for wide/frame_0000000.ply
kill -INT $pid
wait $pid
[ $? -eq 130 ] || fail "wide: expected exit 130"
[ -f wide/frame_0000000.ply ] || fail "wide: frame names are not 7 digits: $(ls wide)"

# A file size limit (as a full disk): positions.pc2 grows by 864 bytes a frame and passes
# 16,000 bytes at its 19th sample (frame 18); the run stops there naming the file and the
# frame, leaves no positions.pc2 and no temporary, and the first frame's OBJ stays.
$check limit 16000 "$pbd" run "$scene" --backend cpu --frames 40 --export full_pc2 \
    --format pc2 --quiet >full_pc2.txt 2>&1
rc=$?
cat full_pc2.txt
[ $rc -eq 1 ] || fail "pc2 over the file size limit: exit $rc, expected 1"
[ "$(wc -l <full_pc2.txt)" -eq 1 ] || fail "pc2 over the limit: more than one line"
grep -q "full_pc2/positions.pc2: write failed: File too large (frame 18)" full_pc2.txt ||
    fail "pc2 over the limit: message"
[ ! -e full_pc2/positions.pc2 ] || fail "pc2 over the limit: positions.pc2 written"
$check files full_pc2 obj 0 || fail "pc2 over the limit: files"
/usr/bin/python3 -c 'import meshio; meshio.read("full_pc2/frame_000000.obj")' ||
    fail "pc2 over the limit: frame 0 unreadable"
# A frame larger than the limit: the first frame fails, nothing is left.
$check limit 2000 "$pbd" run "$scene" --backend cpu --frames 3 --export full_vtk --format vtk \
    --quiet >full_vtk.txt 2>&1
rc=$?
cat full_vtk.txt
[ $rc -eq 1 ] || fail "vtk over the limit: exit $rc"
grep -q "full_vtk/frame_000000.vtu: write failed: File too large (frame 0)" full_vtk.txt ||
    fail "vtk over the limit: message"
[ -z "$(ls full_vtk)" ] || fail "vtk over the limit: left $(ls full_vtk)"

# A full disk mid-run: a 64 KiB tmpfs, mounted in a user namespace where the system allows
# one (otherwise this part is left out, and said so).
mkdir mnt
if unshare --user --map-root-user --mount sh -c "mount -t tmpfs -o size=64k none mnt" \
    2>/dev/null; then
    unshare --user --map-root-user --mount sh -c "mount -t tmpfs -o size=64k none mnt &&
        '$pbd' run '$scene' --backend cpu --frames 40 --export mnt/out --format vtk --quiet \
            >tmpfs.txt 2>&1; echo \$? >tmpfs_rc.txt; cp -r mnt/out tmpfs_out"
    cat tmpfs.txt
    [ "$(cat tmpfs_rc.txt)" -eq 1 ] || fail "full tmpfs: exit $(cat tmpfs_rc.txt)"
    grep -q "No space left on device (frame [0-9]*)" tmpfs.txt || fail "full tmpfs: message"
    $check pvd tmpfs_out 0.01 || fail "full tmpfs: series.pvd"
    [ -z "$(ls tmpfs_out | grep -v -e '^frame_[0-9]*\.vtu$' -e '^series.pvd$')" ] ||
        fail "full tmpfs: left $(ls tmpfs_out)"
    echo "full tmpfs: $(ls tmpfs_out | grep -c vtu) frames kept"
else
    echo "full tmpfs: left out (no user namespaces here)"
fi

# SIGINT during an export: the frames written stay, series.pvd lists exactly them.
env --default-signal "$pbd" run "$scene" --backend cpu --frames 1000000 --export sig \
    --format vtk --export-every 500 \
    >/dev/null 2>sig.txt &
pid=$!
wait_for sig/frame_0000000.vtu
sleep 1
kill -INT $pid
wait $pid
rc=$?
cat sig.txt
[ $rc -eq 130 ] || fail "SIGINT: exit $rc, expected 130"
grep -q "kept the [0-9]* frames exported to sig" sig.txt || fail "SIGINT: message"
$check pvd sig 0.01 || fail "SIGINT: series.pvd"
$check files sig vtu "$(ls sig | sed -n 's/^frame_0*\([0-9][0-9]*\)\.vtu$/\1/p; s/^frame_0*\.vtu$/0/p' | paste -sd,)" ||
    fail "SIGINT: files"
# A run continued from a checkpoint into the same folder continues its point cache and its
# series.pvd: both as one uninterrupted run's. A cache it cannot continue (another grid) is
# refused before the run, and left as it was.
"$pbd" run "$scene" --backend cpu --frames 4 --export half_pc2 --format pc2 --save-state half.ck \
    --quiet || fail "resume: first half, exit $?"
cp -r half_pc2 grid_pc2
"$pbd" run "$scene" --backend cpu --frames 4 --load-state half.ck --export half_pc2 --format pc2 \
    --quiet || fail "resume: second half, exit $?"
"$pbd" run "$scene" --backend cpu --frames 8 --export whole_pc2 --format pc2 --quiet ||
    fail "resume: whole run, exit $?"
cmp half_pc2/positions.pc2 whole_pc2/positions.pc2 || fail "resume: the point cache differs"
# the first half's cache ends at the checkpoint, but every frame: not this run's grid of 3
cp grid_pc2/positions.pc2 kept.pc2
"$pbd" run "$scene" --backend cpu --frames 3 --load-state half.ck --export grid_pc2 --format pc2 \
    --export-every 3 >grid.txt 2>&1 && fail "resume: another grid taken"
grep -q "^pbd: grid_pc2/positions.pc2: found a cache of [0-9]* points, frames 0 every 1 (5 samples), expected one of [0-9]* points every 3 ending at frame 1 or 4" grid.txt ||
    fail "resume: another grid: $(cat grid.txt)"
cmp grid_pc2/positions.pc2 kept.pc2 || fail "resume: the refused run changed the cache"
# the whole run's cache ends at frame 8, past the checkpoint's 4
"$pbd" run "$scene" --backend cpu --frames 4 --load-state half.ck --export whole_pc2 --format pc2 \
    >past.txt 2>&1 && fail "resume: a cache past the checkpoint taken"
grep -q "frames 0 every 1 (9 samples), expected one of [0-9]* points every 1 ending at frame 3 or 4" past.txt ||
    fail "resume: a cache past the checkpoint: $(cat past.txt)"
"$pbd" run "$scene" --backend cpu --frames 4 --export half_vtk --format vtk --quiet &&
    "$pbd" run "$scene" --backend cpu --frames 4 --load-state half.ck --export half_vtk \
        --format vtk --quiet || fail "resume: vtk, exit $?"
"$pbd" run "$scene" --backend cpu --frames 8 --export whole_vtk --format vtk --quiet ||
    fail "resume: whole vtk run, exit $?"
cmp half_vtk/series.pvd whole_vtk/series.pvd || fail "resume: series.pvd differs"
echo "export: ok"
