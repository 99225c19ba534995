// A log: a cylinder of radius 0.15 m and length 0.8 m along x, for `gmsh -3`.
SetFactory("OpenCASCADE");
Cylinder(1) = {-0.4, 0, 0, 0.8, 0, 0, 0.15};
Mesh.MeshSizeMax = 0.1;
