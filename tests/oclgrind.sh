#!/bin/sh
# The GPU kernels on Oclgrind, a simulated OpenCL GPU that checks every access while it runs:
# small scenes (one and several bodies, momentum on, both solvers, BDF2, rigid damping, the
# floor, a sphere, attachments, shape matching of bodies and of clusters, pressure) under
# --data-races must print no diagnostic and end in the CPU reference's bits (its sums in the
# GPU kernels' order); four of them also run under --uninitialized. So must the CPU devices'
# kernels (--variant cpu; the reference's sums in their order; clusters many enough for
# their pull launch among them). The float-sum path (devices
# without fp64) must match PoCL running the same kernels. Devices too small for the solver (a
# work-group limit of 32, 4 KiB of local memory) are refused with one line naming the limit,
# and a limit of 128 still runs. A kernel made to read past its buffer is reported, so the
# check is known to see. Skips (77) where oclgrind is not installed.
# usage: oclgrind.sh PBD SCENES_DIR KERNELS_DIR WORKDIR
set -u
pbd=$1
scenes=$2
kernels=$3
dir=$4
command -v oclgrind >/dev/null 2>&1 || {
    echo "oclgrind is not installed (Debian: apt-get install oclgrind): skipped"
    exit 77
}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "FAIL: $1"
    exit 1
}

# Runs SCENE OPTIONS... on Oclgrind (its options in $OG) and on REF_BACKEND; compares.
n=0
OGV=
check() {
    scene=$1
    shift
    n=$((n + 1))
    # shellcheck disable=SC2086
    oclgrind $OG "$pbd" run "$scene" --device Oclgrind $OGV --quiet --dump og$n.txt "$@" \
        >og$n.out 2>og$n.err || fail "$scene $*: exit $? on Oclgrind: $(head -c 2000 og$n.err)"
    [ -s og$n.err ] && fail "$scene $*: Oclgrind said: $(head -c 4000 og$n.err)"
    # shellcheck disable=SC2086
    "$pbd" run "$scene" --quiet --dump ref$n.txt $REF "$@" ||
        fail "$scene $*: the reference run failed"
    cmp -s og$n.txt ref$n.txt || fail "$scene $* ($OG): Oclgrind and the reference differ: \
$(cmp og$n.txt ref$n.txt)"
    echo "ok: $scene $* ($OG)"
}

OG="--data-races"
REF="--backend cpu --sums tree"
check "$scenes/two_particles.json" --frames 10
check "$scenes/spinning_box.json" --frames 3
check "$scenes/spinning_box.json" --frames 3 --solver jacobi
check @cloth-16 --frames 3
check @cloth-16 --frames 2 --solver jacobi
check "$scenes/rope.json" --frames 3 --velocity-update bdf2
check @boxes-4x8 --frames 3 --damping rigid --damping-k 0.1
check "$scenes/cloth_sphere.json" --frames 2
# Tethers sharing their pinned anchors within a colour, and a serial overflow set.
check "$scenes/../tests/shared_overflow.json" --frames 2
# Distance constraints past the bound: a spinning wheel of 40 spokes under a bound of 8
# colours, its other 32 spokes a serial overflow set on the GPU variant (its work-group's
# first work-item takes it); the CPU variant's one block takes its 40 colours unbounded.
awk 'BEGIN {
    n = 40
    printf "{\"substeps\": 2, \"iterations\": 3, \"max_colors\": 8, "
    printf "\"planes\": [{\"normal\": [0, 1, 0], \"offset\": 0}], \"bodies\": [{"
    printf "\"type\": \"particles\", \"angular_velocity\": [0, 3, 1], \"positions\": [[0, 0.6, 0]"
    for (i = 0; i < n; ++i)
        printf ", [%.6f, 0.6, %.6f]", 0.5 * cos(6.283185307 * i / n), 0.5 * sin(6.283185307 * i / n)
    printf "], \"constraints\": ["
    for (i = 0; i < n; ++i)
        printf "%s[0, %d], [%d, %d]", i ? ", " : "", i + 1, i + 1, (i + 1) % n + 1
    printf "]}]}\n"
}' >wheel.json
"$pbd" run wheel.json --frames 1 --variant gpu | grep -q "distance (9 colours, the last 32 serial)" ||
    fail "wheel.json: not 8 distance colours and 32 serial on the GPU variant"
check wheel.json --frames 3
check "$scenes/jelly.json" --frames 2
check "$scenes/jelly_bar.json" --frames 2
check "$scenes/balloon.json" --frames 2 --solver jacobi
# Bodies that damp their own ways (point, rigid, the run's none): the update and the
# prediction read each particle's body's fractions.
cat >body_damping.json <<'EOF'
{"dt": 0.016666666666666666, "substeps": 2, "iterations": 3,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [
  {"type": "tet_box", "cells": [2, 2, 2], "size": [0.2, 0.2, 0.2], "center": [0, 0.12, 0],
   "density": 500, "compliance": 1e-4, "angular_velocity": [1, 2, 3], "damping": "point",
   "damping_k": 0.05},
  {"type": "tet_box", "cells": [2, 2, 2], "size": [0.2, 0.2, 0.2], "center": [0.4, 0.12, 0],
   "density": 500, "young_modulus": 5000, "poisson_ratio": 0.3, "angular_velocity": [1, 2, 3],
   "damping": "rigid", "damping_k": 0.1},
  {"type": "rope", "segments": 6, "start": [0.8, 0.3, 0], "end": [1.1, 0.3, 0], "mass": 0.1}]}
EOF
check body_damping.json --frames 3
# A bouncing floor (the update with restitution, which reads the corrected velocity).
sed 's/"offset": 0}]/"offset": 0, "restitution": 0.5}]/' body_damping.json >bounce.json
check bounce.json --frames 6
# Particle contacts: a box falling onto another on a floor with friction, and a cloth with
# self-collision (the hash's atomics, the candidate lists, the Jacobi gather), both solvers.
cat >contacts.json <<'EOF'
{"dt": 0.016666666666666666, "substeps": 2, "iterations": 3,
 "planes": [{"normal": [0, 1, 0], "offset": 0, "friction": 0.5}],
 "bodies": [
  {"type": "tet_box", "cells": [2, 2, 2], "size": [0.2, 0.2, 0.2], "center": [0, 0.11, 0],
   "density": 500, "particle_radius": 0.05, "friction": 0.5},
  {"type": "tet_box", "cells": [2, 2, 2], "size": [0.2, 0.2, 0.2], "center": [0.05, 0.42, 0.03],
   "density": 500, "velocity": [0, -1, 0], "particle_radius": 0.05, "friction": 0.5},
  {"type": "cloth", "resolution": [6, 6], "size": [0.5, 0.5], "center": [0, 0.65, 0],
   "mass": 0.1, "self_collision": true}]}
EOF
check contacts.json --frames 3
check contacts.json --frames 2 --solver jacobi
# Radii in two classes (the cloth's 0.02 m on 12 x 12 particles, the boxes' 0.05 m): the
# boxes' particles search the cloth's cells two wide, in rows; with the cloth's 0.012 m on
# its 6 x 6, its whole part of the table.
sed -e 's/"self_collision": true}/"self_collision": true, "particle_radius": 0.02}/' \
    -e 's/"resolution": \[6, 6\]/"resolution": [12, 12]/' contacts.json >classes.json
check classes.json --frames 2
sed 's/"self_collision": true}/"self_collision": true, "particle_radius": 0.012}/' contacts.json \
    >classes_whole.json
check classes_whole.json --frames 2
# Uninitialised values. Oclgrind 21.10's --uninitialized crashes on a vector shuffle with
# undefined lanes, which LLVM's optimiser makes of a float4 length (its shuffle handler tests
# the lane index against UndefValueVal, 11, where LLVM marks an undefined lane -1); built with
# -O0 the GPU kernels contain none.
OG="--uninitialized --build-options -O0"
check "$scenes/two_particles.json" --frames 5
check "$scenes/spinning_box.json" --frames 2
check @cloth-16 --frames 2 --solver jacobi
check "$scenes/balloon.json" --frames 2
check contacts.json --frames 2
# The CPU devices' kernels (float16 lanes, the distance and element blocks, the body
# constraints' and pressure's tables, the four-particle elements sixteen at a time) on
# Oclgrind, built at -O0:
# its build of them at -O1 or -O2 differs from PoCL and the reference in the last bit of a
# few values (after one Gauss-Seidel iteration of a 16 x 16 cloth; Jacobi agrees), and at
# -O0 they agree. Why is not known: nothing is reported at -O0, and its --uninitialized
# check crashes on these kernels. The elements' scene has over sixteen of each a colour, each
# colour a launch; a copy of it takes each type's colours in one launch, one work-item: in
# one block, sixteen at a time (Gauss-Seidel; with 12 colours at most, ending in the overflow
# set, one by one), or one by one (Jacobi).
cat >elements.json <<'EOF'
{"dt": 0.016666666666666666, "substeps": 2, "iterations": 3, "serial_color_size": 0,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [
  {"type": "tet_box", "cells": [6, 6, 6], "size": [0.3, 0.3, 0.3], "center": [0, 0.2, 0],
   "density": 100, "young_modulus": 5000, "poisson_ratio": 0.3, "angular_velocity": [1, 2, 0]},
  {"type": "cloth", "resolution": [16, 16], "size": [0.5, 0.5], "center": [0, 0.65, 0],
   "mass": 0.1, "bending": "dihedral", "bending_compliance": 0.01, "pin": "corners"},
  {"type": "cloth", "resolution": [16, 16], "size": [0.5, 0.5], "center": [0.6, 0.6, 0],
   "mass": 0.1, "bending": "isometric", "bending_compliance": 0.01}]}
EOF
sed 's/"serial_color_size": 0,//' elements.json >elements_one_launch.json
sed 's/"serial_color_size": 0,/"max_colors": 12,/' elements.json >elements_overflow.json
ones() { # scene, options: the types in one launch and in one block
    out=$("$pbd" run "$@" --frames 1 --variant cpu 2>/dev/null)
    echo "$(printf '%s' "$out" | grep -o "in one launch" | wc -l)" \
        "$(printf '%s' "$out" | grep -o "serial, in one block" | wc -l)" \
        "$(printf '%s' "$out" | grep -o "in one block" | wc -l)"
}
got=$(ones elements.json)
[ "$got" = "0 0 0" ] || fail "elements.json: $got (in one launch, ending serially in one block, in one block), expected 0 0 0"
got=$(ones elements_one_launch.json)
[ "$got" = "0 0 3" ] || fail "elements_one_launch.json: $got, expected 0 0 3"
got=$(ones elements_one_launch.json --solver jacobi)
[ "$got" = "3 0 0" ] || fail "elements_one_launch.json with Jacobi: $got, expected 3 0 0"
got=$(ones elements_overflow.json)
[ "$got" = "0 3 3" ] || fail "elements_overflow.json: $got, expected 0 3 3"
# A UV sphere whose poles have more triangles (18) than pressure's table holds: the sixteen
# particles they are among go one by one, the others from the table.
awk 'BEGIN { n = 18; r = 3; pi = atan2(0, -1); print "v 0 0.3 0"; print "v 0 -0.3 0"
  for (i = 0; i < r; i++) for (j = 0; j < n; j++) { t = pi * (i + 1) / (r + 1); p = 2 * pi * j / n
    printf "v %.7f %.7f %.7f\n", 0.3 * sin(t) * cos(p), 0.3 * cos(t), 0.3 * sin(t) * sin(p) }
  for (j = 0; j < n; j++) { a = 3 + j; b = 3 + (j + 1) % n; l = 3 + (r - 1) * n
    printf "f 1 %d %d\nf 2 %d %d\n", b, a, l + j, l + (j + 1) % n
    for (i = 0; i + 1 < r; i++) { p = a + i * n; q = b + i * n
      printf "f %d %d %d\nf %d %d %d\n", p, q, q + n, p, q + n, p + n } } }' >uv_sphere.obj
cat >uv_balloon.json <<'EOF'
{"dt": 0.016666666666666666, "iterations": 3,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [{"type": "mesh", "file": "uv_sphere.obj", "as": "cloth", "bending": false,
   "translate": [0, 0.4, 0], "mass": 1, "compliance": 1e-3, "pressure": 1.3,
   "angular_velocity": [1, 2, 3]}]}
EOF
# Wide clusters (over 8,000 memberships) take no more launches than one cluster.
cat >cluster_sets.json <<'EOF'
{"dt": 0.016666666666666666, "iterations": 2,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [{"type": "tet_box", "cells": [8, 8, 8], "size": [0.4, 0.4, 0.4],
   "center": [0, 0.3, 0], "mass": 1, "compliance": 1e-3, "angular_velocity": [1, 2, 3],
   "shape_matching": {"stiffness": 0.4, "clusters": {"spacing": 0.1, "radius": 0.2}},
   "pressure": 1.1}]}
EOF
# Two long thin boxes of 4,104 particles each, volume and Neo-Hookean: four blocks, so each
# type's elements run in two launches an iteration, a work-item a group of cuts and then a
# block (project_<type>_blocks), with groups of fewer than sixteen. Each box is five
# segments: on a CPU device the fused update hands their sums to the last one's work-item
# through an atomic counter, which OpenCL does not make visible between work-groups
# elsewhere (and Oclgrind reports as a race); here they take the separate launches.
cat >element_blocks.json <<'EOF'
{"dt": 0.016666666666666666, "substeps": 4, "iterations": 1,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [
  {"type": "tet_box", "cells": [3, 1, 512], "size": [0.06, 0.02, 10.24],
   "center": [0, 0.02, 0], "density": 100, "volume": true, "volume_compliance": 1e-6,
   "compliance": 1e-4},
  {"type": "tet_box", "cells": [3, 1, 512], "size": [0.06, 0.02, 10.24],
   "center": [0.2, 0.02, 0], "density": 100, "young_modulus": 2500, "poisson_ratio": 0.3}]}
EOF
l=$("$pbd" run element_blocks.json --frames 1 --variant cpu 2>/dev/null | sed -n 's/.*, \([0-9]*\) launches per frame/\1/p')
[ "$l" -eq 32 ] || fail "element_blocks.json: $l launches a frame, expected 32"
# One of those boxes alone, without distance constraints: its blocks also collide with the
# floor after their colours, so a substep is the prediction, the cuts, the blocks and the
# update, with no collide launch.
cat >element_collide.json <<'EOF'
{"dt": 0.016666666666666666, "substeps": 4, "iterations": 1,
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "bodies": [
  {"type": "tet_box", "cells": [3, 1, 512], "size": [0.06, 0.02, 10.24],
   "center": [0, 0.012, 0], "density": 100, "young_modulus": 2500, "poisson_ratio": 0.3,
   "velocity": [0, -1, 0]}]}
EOF
l=$("$pbd" run element_collide.json --frames 1 --variant cpu 2>/dev/null | sed -n 's/.*, \([0-9]*\) launches per frame/\1/p')
[ "$l" -eq 16 ] || fail "element_collide.json: $l launches a frame, expected 16"
# The same two boxes each pinned at the layer their block cut runs through: an element that
# reaches a pin across the cut is a boundary element, since the blocks store a whole group's
# every particle, a pinned one as it was (the plan that let a pin sit in two blocks' elements
# is reported as a race here).
sed 's/"poisson_ratio": 0.3}/"poisson_ratio": 0.3, "pinned": [2048, 2049, 2050, 2051, 2052, 2053, 2054, 2055]}/
     s/"compliance": 1e-4}/"compliance": 1e-4, "pinned": [2048, 2049, 2050, 2051, 2052, 2053, 2054, 2055]}/' \
    element_blocks.json >element_pins.json
grep -c '"pinned"' element_pins.json | grep -q 2 || fail "element_pins.json: the pins were not added"
sed 's/"spacing": 0.1, "radius": 0.2/"spacing": 1/' cluster_sets.json >cluster_one.json
l1=$("$pbd" run cluster_sets.json --frames 1 --variant cpu 2>/dev/null | sed -n 's/.*, \([0-9]*\) launches per frame/\1/p')
l0=$("$pbd" run cluster_one.json --frames 1 --variant cpu 2>/dev/null | sed -n 's/.*, \([0-9]*\) launches per frame/\1/p')
[ "$l1" -eq "$l0" ] || fail "cluster_sets.json: $l1 launches a frame, expected one cluster's $l0"
OG="--data-races --build-options -O0"
REF="--backend cpu --sums lanes"
OGV="--variant cpu" # on Oclgrind only: the CPU reference runs no kernels
check "$scenes/two_particles.json" --frames 5
check @cloth-16 --frames 3
check @cloth-16 --frames 2 --solver jacobi
check "$scenes/balloon.json" --frames 2
check "$scenes/balloon.json" --frames 2 --solver jacobi
check "$scenes/jelly_bar.json" --frames 2
check "$scenes/spinning_soft_cube.json" --frames 2
check elements.json --frames 2
check elements.json --frames 1 --solver jacobi
check elements_one_launch.json --frames 1
check elements_one_launch.json --frames 1 --solver jacobi
check elements_overflow.json --frames 1
check wheel.json --frames 3
check bounce.json --frames 6
check uv_balloon.json --frames 2
check cluster_sets.json --frames 1
check element_blocks.json --frames 1
check element_pins.json --frames 1
check element_collide.json --frames 1
check body_damping.json --frames 3
OGV=
# Compensated float sums: the same kernels on PoCL.
OG="--data-races"
REF="--variant gpu"
check "$scenes/spinning_box.json" --frames 3 --float-sums
# A device with work-groups of at most 128 runs the same steps.
OG="--max-wgsize 128"
REF="--backend cpu --sums tree"
check "$scenes/spinning_box.json" --frames 2

refused() { # oclgrind options, expected message
    out=$(oclgrind $1 "$pbd" run "$scenes/spinning_box.json" --frames 1 --quiet \
        --dump refused.txt 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "$1: exit $rc, expected 1 ($out)"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$1: more than one line: $out"
    printf '%s\n' "$out" | grep -qF "$2" || fail "$1: message was: $out"
    [ ! -e refused.txt ] || fail "$1: an output was written"
    echo "ok: refused with $1"
}
refused "--max-wgsize 32" "CL_DEVICE_MAX_WORK_GROUP_SIZE is 32; kernel body_reduce needs work-groups of 64"
refused "--local-mem-size 4096" "bytes of local memory, the device has 4096 (CL_DEVICE_LOCAL_MEM_SIZE)"
# The check sees: predict reading one particle past the end is reported.
cp -r "$kernels" broken_kernels &&
    sed -i 's/if (i < num_particles)/if (i <= num_particles)/' broken_kernels/gpu/predict.cl ||
    fail "cannot make the broken kernels"
oclgrind --data-races "$pbd" run "$scenes/two_particles.json" --device Oclgrind --quiet \
    --frames 1 --kernel-dir broken_kernels >broken.out 2>&1
grep -q "Invalid read of size 16" broken.out && grep -q "Kernel: predict" broken.out ||
    fail "an out-of-bounds read in predict was not reported: $(head -c 2000 broken.out)"
echo "ok: an out-of-bounds read is reported"
echo "oclgrind: ok"
