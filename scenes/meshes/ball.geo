// A bowling ball: a sphere of radius 0.11 m, for `gmsh -3`.
SetFactory("OpenCASCADE");
Sphere(1) = {0, 0, 0, 0.11};
Mesh.MeshSizeMax = 0.035;
