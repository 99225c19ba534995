#!/bin/sh
# pbd view under Xvfb with Mesa's software renderer: the default cloth after 10 frames and
# the spinning box compared with and without momentum preservation are drawn where they are
# and nothing where nothing is (png_check); the vertex buffer holds the solver's positions
# after every frame (--verify), and the viewer says which way the positions took and why
# (shared with OpenCL, or read back); a scripted drag pulls a particle and keeps the tracked
# momenta; without a display the viewer fails with one line and writes
# nothing. Skips (77) only where no X server can be started (no xvfb-run) or the build has
# no viewer.
# usage: view.sh PBD PNG_CHECK SCENES_DIR WORKDIR
set -u
pbd=$1
check=$2
scenes=$3
dir=$4
command -v xvfb-run >/dev/null 2>&1 || {
    echo "xvfb-run is not installed (Debian: apt-get install xvfb xauth): skipped"
    exit 77
}
if "$pbd" view 2>&1 | grep -q "this build has no viewer"; then
    echo "this build has no viewer (libglfw3-dev, python3-glad): skipped"
    exit 77
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "FAIL: $1"
    exit 1
}
x() { xvfb-run -a -s "-screen 0 1024x768x24" "$@"; }

x "$pbd" view "$scenes/cloth.json" --frames 10 --screenshot cloth.png --size 640x360 ||
    fail "the cloth screenshot failed"
"$check" cloth.png || fail "the cloth screenshot is not as expected"
x "$pbd" view "$scenes/spinning_box.json" --frames 50 --compare momentum --screenshot \
    compare.png --size 800x300 || fail "the comparison screenshot failed"
"$check" compare.png 2 || fail "the comparison screenshot is not as expected"
out=$(x "$pbd" view "$scenes/cloth.json" --frames 5 --verify --size 320x240) ||
    fail "--verify failed: $out"
echo "$out" | grep -q "verified     5 frames: the vertex buffer held the solver's positions" ||
    fail "--verify said: $out"
# Which way the positions reach the vertex buffer, and why: shared only where the device
# lists cl_khr_gl_sharing (and runs the window's context); read back otherwise.
if "$pbd" devices | grep -q "cl_khr_gl_sharing yes"; then
    echo "a device lists cl_khr_gl_sharing: the path of the default device is not checked"
else
    echo "$out" | grep -q "(positions read back, glBufferSubData: the device lists no cl_khr_gl_sharing)" ||
        fail "--verify on a device without sharing said: $out"
fi
out=$(x "$pbd" view "$scenes/cloth.json" --frames 3 --verify --read-back --backend cpu \
    --size 320x240) || fail "--verify --backend cpu failed: $out"
echo "$out" | grep -q "verified     3 frames.*(positions read back, glBufferSubData: --read-back)" ||
    fail "--read-back said: $out"
out=$(x "$pbd" view "$scenes/cloth.json" --frames 3 --verify --backend cpu --size 320x240) ||
    fail "--verify --backend cpu failed: $out"
echo "$out" | grep -q "glBufferSubData: the CPU reference shares nothing with OpenGL)" ||
    fail "--verify --backend cpu said: $out"
# A drag, as the mouse does it: particle 0 of the free spinning box pulled toward a point
# 1.7 m away gets at least 30 % closer in 60 frames, and the box's P and L stay the tracked
# P_r and L_r (the pull is an external impulse) to 1e-6.
out=$(x "$pbd" view "$scenes/spinning_box.json" --frames 60 --drag 0:-2,2,0 --size 320x240 \
    --screenshot drag.png) || fail "--drag failed: $out"
echo "$out" | awk '
    /^dragged/ { d0 = $5 + 0; d1 = $8 + 0; seen++ }
    /^body/ { dp = $6 + 0; p = $9 + 0; dl = $13 + 0; l = $16 + 0; seen++ }
    END {
        ok = seen == 2 && d1 < 0.7 * d0 && dp <= 1e-6 * p && dl <= 1e-6 * l && p > 0.1
        exit ok ? 0 : 1
    }' || fail "--drag: $out"
echo "$out"
out=$(env -u DISPLAY -u WAYLAND_DISPLAY "$pbd" view "$scenes/cloth.json" --frames 2 \
    --screenshot none.png 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "without a display: exit $rc, expected 1 ($out)"
echo "$out" | grep -q "cannot open a display" || fail "without a display: $out"
[ ! -e none.png ] || fail "without a display: a file was written"
left=$(ls | grep '\.tmp\.')
[ -z "$left" ] || fail "temporary files left: $left"
echo "view: ok"
