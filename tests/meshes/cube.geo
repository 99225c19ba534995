// A unit cube meshed coarsely (14 nodes): Gmsh's own files for the tests of .msh reading,
// made with Debian 12's gmsh 4.8.4 in tests/meshes:
//   gmsh -3 -format msh41 cube.geo -o cube41.msh
//   gmsh -3 -bin -format msh41 cube.geo -o cube41b.msh
//   gmsh -3 -bin -format msh22 cube.geo -o cube22b.msh
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 1, 1};
Mesh.MeshSizeMin = 1;
Mesh.MeshSizeMax = 1;
