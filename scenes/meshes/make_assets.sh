#!/bin/sh
# Remakes the meshes in this folder (docs/meshes.md): Debian 12's python3, tetgen 1.5.0 and
# gmsh 4.8.4. TetGen (AGPL) and Gmsh only prepare these files; pbd links neither.
# usage: cd scenes/meshes && sh make_assets.sh
set -eu
python3 make_surfaces.py                      # torus.off, tablecloth.obj, balloon.obj
tetgen -Q -pq1.4a0.001 torus.off              # torus.1.node, .ele, .face
for e in node ele face; do mv "torus.1.$e" "torus.$e"; done
rm -f torus.off torus.1.edge torus.1.smesh
gmsh -3 -format msh22 log.geo -o log22.msh >/dev/null
gmsh -3 -format msh41 log.geo -o log41.msh >/dev/null
gmsh -3 -format msh41 bunny.geo -o bunny.msh >/dev/null   # 1,057 nodes, 3,736 tetrahedra
gmsh -3 -format msh41 car.geo -o car.msh >/dev/null       # 1,894 nodes, 7,261 tetrahedra
gmsh -3 -format msh41 ball.geo -o ball41.msh >/dev/null
gmsh -3 -format msh41 pin.geo -o pin41.msh >/dev/null
