// A bowling pin, simplified: a cylinder of radius 0.05 m and height 0.38 m along y, its
// base at the origin, for `gmsh -3`.
SetFactory("OpenCASCADE");
Cylinder(1) = {0, 0, 0, 0, 0.38, 0, 0.05};
Mesh.MeshSizeMax = 0.04;
