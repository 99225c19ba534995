#!/bin/sh
# The exports opened by the tools they are for, where installed: ParaView's pvpython reads
# series.pvd (every frame, the particles and the tetrahedra), Blender imports the OBJ and
# reads positions.pc2 through a Mesh Cache modifier. Exit 77 (skip) when neither is
# installed.
# usage: export_tools.sh PBD SCENE WORKDIR
set -u
pbd=$1
scene=$2
dir=$3
pv=$(command -v pvpython)
bl=$(command -v blender)
if [ -z "$pv" ] && [ -z "$bl" ]; then
    echo "skipped: neither pvpython (ParaView) nor blender is installed"
    exit 77
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() {
    echo "FAIL: $1"
    exit 1
}
# 72 particles; 30 tetrahedra, 52 triangles and 8 vertices (see export.sh).
if [ -n "$pv" ]; then
    "$pbd" run "$scene" --backend cpu --frames 10 --export-every 5 --export vtk --format vtk \
        --quiet || fail "export vtk"
    "$pv" - <<'PY' || fail "pvpython"
from paraview.simple import PVDReader
r = PVDReader(FileName="vtk/series.pvd")
times = list(r.TimestepValues)
assert len(times) == 3, times
r.UpdatePipeline(times[-1])
info = r.GetDataInformation()
assert info.GetNumberOfPoints() == 72, info.GetNumberOfPoints()
assert info.GetNumberOfCells() == 90, info.GetNumberOfCells()
print("pvpython: 3 time steps, 72 points, 90 cells")
PY
fi
if [ -n "$bl" ]; then
    "$pbd" run "$scene" --backend cpu --frames 10 --export-every 5 --export pc2 --format pc2 \
        --quiet || fail "export pc2"
    "$bl" -b --factory-startup --python-exit-code 1 --python-expr '
import bpy, os
for o in list(bpy.data.objects):
    bpy.data.objects.remove(o)
obj = os.path.abspath("pc2/frame_000000.obj")
if hasattr(bpy.ops.wm, "obj_import"):
    bpy.ops.wm.obj_import(filepath=obj, use_split_objects=False, use_split_groups=False)
else:
    bpy.ops.import_scene.obj(filepath=obj, split_mode="OFF")
ob = bpy.context.selected_objects[0]
assert len(ob.data.vertices) == 72, len(ob.data.vertices)
m = ob.modifiers.new("cache", "MESH_CACHE")
m.cache_format = "PC2"
m.filepath = os.path.abspath("pc2/positions.pc2")
bpy.context.view_layer.update()
print("blender: 72 vertices, the point cache attached")
' || fail "blender"
fi
echo "export tools: ok"
